import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { createInterface } from "node:readline";
import { jetstream } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterAll, afterEach, describe, expect, inject, it } from "vitest";
import { DroverConfig } from "../../contracts/index.ts";
import { createProcessStrategy } from "../../platform/hosts/process-strategy.ts";
import { incarnationState, parseProcessIncarnation } from "../../platform/hosts/proc-table.ts";
import { processSpace } from "../../platform/process-space.ts";
import { RecoveryState, startRecovery, type RecoveryService } from "../../services/recovery/index.ts";
import { createEventStore, heartbeatSubject, runtimeRef } from "../../streams/index.ts";
import { heartbeatJson, readyProcessRuntime, writer } from "../support/recovery-fixture.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * Fencing a process host is done only by a party that can see it (issue #13): a real process in a
 * sibling PID namespace (`unshare --pid`, as a runtime in the provisioner's Pod is to recovery's Pod)
 * is numbered by its own namespace, so this /proc says nothing about it. The process strategy, and
 * recovery through it against a real nats-server, must answer "out of reach" and leave it running,
 * never "killed" from a /proc miss.
 */
interface Foreign {
  readonly child: ChildProcess;
  readonly inc: string;
  readonly pid: number;
  readonly node: string;
}
const foreign: ChildProcess[] = [];
const SCRIPT = [
  "const { processSpace } = await import('./platform/process-space.ts');",
  "const { processIncarnation } = await import('./platform/process-incarnation.ts');",
  "console.log(JSON.stringify({ inc: processIncarnation(process.pid), pid: process.pid, node: processSpace() }));",
  "setInterval(() => {}, 60_000);",
].join(" ");

/** A long-lived process in a new PID namespace, with the incarnation and process space it sees itself. */
async function foreignHost(): Promise<Foreign> {
  const child = spawn(
    "unshare",
    [
      "--pid",
      "--fork",
      "--kill-child",
      "--mount-proc",
      process.execPath,
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      SCRIPT,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  foreign.push(child);
  const line = await new Promise<string>((ok, fail) => {
    createInterface({ input: child.stdout! }).once("line", ok);
    child.once("exit", (code) => fail(new Error(`unshare exited (${code}) before the host announced itself`)));
  });
  return { child, ...(JSON.parse(line) as { inc: string; pid: number; node: string }) };
}
const alive = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

// --kill-child: the namespace's process dies with unshare (it is not our child to reap).
afterAll(async () => {
  await Promise.all(foreign.map((c) => (alive(c) ? new Promise((r) => c.once("exit", r).kill("SIGKILL")) : undefined)));
});

describe("fencing a process host from another process space (real processes, a sibling PID namespace)", () => {
  it("a host of another PID namespace is out of reach: nothing signalled, nothing concluded, it keeps running", async () => {
    const h = await foreignHost();
    expect(h.node).not.toBe(processSpace());
    const inc = parseProcessIncarnation(h.inc)!;
    // The hazard: this /proc has no such incarnation (pid 1 here is another process), so a /proc check
    // would have called the host gone.
    expect(incarnationState(inc.pid, inc.startTime)).toBe("gone");
    const k = await createProcessStrategy().kill(
      "rt-foreign",
      { hostIncarnation: h.inc, pid: h.pid, node: h.node },
      2_000,
    );
    expect(k.outcome).toBe("out-of-reach");
    expect(k.outcome !== "killed" && k.detail).toContain(h.node);
    // A host whose process space was never recorded is out of reach too.
    const unknown = await createProcessStrategy().kill("rt-foreign", { hostIncarnation: h.inc, pid: h.pid }, 2_000);
    expect(unknown.outcome).toBe("out-of-reach");
    await new Promise((r) => setTimeout(r, 300));
    expect(alive(h.child)).toBe(true);
  });

  describe("recovery (real nats-server)", () => {
    let fx: StreamsFixture | undefined, service: RecoveryService | undefined;
    afterEach(async () => {
      await service?.stop();
      await fx?.close();
    });

    it("suspects a silent runtime on a host of another PID namespace and records fence-failed host-out-of-reach, never fenced", async () => {
      const h = await foreignHost();
      fx = await freshStreams(inject("natsUrl"), "pspace");
      const store = createEventStore(fx.nc, fx.layout);
      const CP = "cp-pspace";
      await readyProcessRuntime(store, {
        controlPlaneId: CP,
        rt: "rt-foreign",
        pid: h.pid,
        tenantId: "t-f",
        node: h.node,
        incarnation: h.inc,
      });
      const js = jetstream(fx.nc);
      await js.publish(
        heartbeatSubject(fx.layout, "rt-foreign"),
        heartbeatJson("rt-foreign", h.inc, 1, { at: new Date(Date.now() - 60_000).toISOString() }),
      );
      service = await startRecovery({
        js,
        config: DroverConfig.parse({ controlPlaneId: CP, heartbeatIntervalMs: 200, fenceDeadlineMs: 2000 }),
        layout: fx.layout,
        store,
        state: new RecoveryState(fx.layout.eventPrefix, () => undefined),
        env: writer("test"),
        hosts: () => createProcessStrategy(),
        sha256: (x) => createHash("sha256").update(x).digest("hex"),
        log: pino({ level: "silent" }),
        tickMs: 50,
      });
      await service.ready;
      const failed = await eventually("fence-failed", async () => {
        const e = (await store.read(runtimeRef("rt-foreign"))).events.find(
          (s) => s.event.type === "runtime.fence-failed",
        )?.event;
        return e?.type === "runtime.fence-failed" ? e : undefined;
      });
      expect(failed.data.reason.code).toBe("host-out-of-reach");
      // Several passes later: still not fenced, no plan, and the host still runs.
      await new Promise((r) => setTimeout(r, 1_000));
      const types = (await store.read(runtimeRef("rt-foreign"))).events.map((s) => s.event.type);
      expect(types).toContain("runtime.suspected");
      expect(types).not.toContain("runtime.fenced");
      expect(types).not.toContain("runtime.recovery-planned");
      expect(alive(h.child)).toBe(true);
    });
  });
});
