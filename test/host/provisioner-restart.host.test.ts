import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DroverEvent } from "../../contracts/index.ts";
import { createProcessStrategy } from "../../platform/hosts/process-strategy.ts";
import { incarnationState, parseProcessIncarnation } from "../../platform/hosts/proc-table.ts";
import { processGroupsWithEnv } from "../support/host-processes.ts";
import { uniqueName } from "../support/isolation.ts";
import { provisionerFixture, type ProvisionerFixture } from "../support/provisioner-fixture.ts";
import { exitedProcess, provisionerProcesses } from "../support/provisioner-process.ts";
import { eventually } from "../support/streams.ts";

// Real provisioner processes (services/provisioner/main.ts), real runtimes, real nats-server.
const CP = "DROVER_CONTROL_PLANE_ID";
const cp = uniqueName("cp");
let f: ProvisionerFixture;

let provs: Awaited<ReturnType<typeof provisionerProcesses>>;

beforeAll(async () => {
  f = await provisionerFixture(inject("natsUrl"));
  provs = await provisionerProcesses(inject("natsUrl"), f, {
    controlPlaneId: cp,
    maxConcurrentHostStartups: 2,
    heartbeatIntervalMs: 500,
  });
});
afterAll(async () => {
  provs?.killAll();
  // Runtimes of a SIGKILLed provisioner are not anyone's children: prove their end through /proc.
  const killer = createProcessStrategy();
  for (const id of started) {
    const host = (await f.runtimeEvents(id)).find((s) => s.event.type === "runtime.host-started")?.event;
    if (host?.type === "runtime.host-started")
      // The host's process space (this machine's) is recorded with it: without it no kill is proven.
      await killer.kill(id, { hostIncarnation: host.data.hostIncarnation, node: host.data.node }, 15_000);
  }
  await f?.close();
});
const started = new Set<string>();
const startProvisioner = () => provs.start();
const exited = exitedProcess;
const types = (events: readonly { event: DroverEvent }[]) => events.map((s) => s.event.type);
const fulfilledId = (events: readonly { event: DroverEvent }[]) => {
  const e = events.find((s) => s.event.type === "scaleout.fulfilled")?.event;
  return e?.type === "scaleout.fulfilled" ? (e.data.runtimeInstanceId as string) : "";
};
/** The runtime registered for a request once its host-started is recorded. */
async function hostStartedFor(requestId: string): Promise<{ id: string; incarnation: string }> {
  return eventually(
    `host-started for ${requestId}`,
    async () => {
      let found: { id: string; incarnation: string } | undefined;
      const registered = new Map<string, string>();
      await f.store.replay(
        { seq: 1 },
        (s) => {
          const id = s.subject.split(".").at(-2) as string;
          if (s.event.type === "runtime.registered" && s.event.data.scaleOutRequestId === requestId)
            registered.set(id, requestId);
          if (s.event.type === "runtime.host-started" && registered.has(id))
            found = { id, incarnation: s.event.data.hostIncarnation };
        },
        { filter: `${f.streams.layout.eventPrefix}.runtime.>` },
      );
      return found;
    },
    60_000,
  );
}

describe("provisioner process restarts (real provisioner and runtime processes)", () => {
  it("a provisioner SIGKILLed mid-start is replaced by one that retires the orphan by exact incarnation and fulfils the request once; limits still count runtimes it never spawned; its SIGTERM retires the runtimes it adopted too", async () => {
    const first = startProvisioner();
    const a = await f.request("tenant-ra", cp, { maxRuntimeInstances: 1 });
    const aEvents = await f.settled("tenant-ra", a.event.correlationId);
    expect(types(aEvents).at(-1)).toBe("scaleout.fulfilled");
    started.add(fulfilledId(aEvents));

    const b = await f.request("tenant-rb", cp);
    const orphan = await hostStartedFor(b.event.correlationId);
    started.add(orphan.id);
    first.kill("SIGKILL");
    await exited(first);

    const second = startProvisioner();
    const bEvents = await f.settled("tenant-rb", b.event.correlationId);
    expect(types(bEvents)).toEqual([
      "scaleout.requested",
      "scaleout.observed",
      "scaleout.observed",
      "scaleout.fulfilled",
    ]);
    const replacement = fulfilledId(bEvents);
    started.add(replacement);
    expect(replacement).not.toBe(orphan.id);
    const inc = parseProcessIncarnation(orphan.incarnation)!;
    expect(incarnationState(inc.pid, inc.startTime)).toBe("gone");
    expect(types(await f.runtimeEvents(orphan.id))).toEqual(
      expect.arrayContaining(["runtime.host-start-failed", "runtime.retired"]),
    );
    expect(types(await f.runtimeEvents(orphan.id))).not.toContain("runtime.capacity-published");

    // tenant-ra's runtime was spawned by the dead provisioner; the new one still counts it.
    const c = await f.request("tenant-ra", cp, { maxRuntimeInstances: 1 });
    expect((await f.settled("tenant-ra", c.event.correlationId)).at(-1)?.event).toMatchObject({
      type: "scaleout.rejected",
      data: { reason: { code: "scale-out-limit-reached" } },
    });
    expect(processGroupsWithEnv(CP, cp)).toHaveLength(2);

    // A graceful stop is a planned stop of the runtimes this provisioner spawned and of those it
    // adopted (the SIGKILLed one's: their spawner is gone), each killed at its exact incarnation and retired with the proof.
    const adoptedId = fulfilledId(aEvents);
    second.kill("SIGTERM");
    await exited(second);
    const replacementHost = (await f.runtimeEvents(replacement)).find(
      (s) => s.event.type === "runtime.host-started",
    )?.event;
    const rInc = parseProcessIncarnation(
      replacementHost?.type === "runtime.host-started" ? replacementHost.data.hostIncarnation : "",
    )!;
    expect(incarnationState(rInc.pid, rInc.startTime)).toBe("gone");
    const adopted = await f.runtimeEvents(adoptedId);
    const aHost = adopted.find((s) => s.event.type === "runtime.host-started")?.event;
    const aInc = parseProcessIncarnation(aHost?.type === "runtime.host-started" ? aHost.data.hostIncarnation : "")!;
    expect(incarnationState(aInc.pid, aInc.startTime)).toBe("gone");
    for (const events of [adopted, await f.runtimeEvents(replacement)]) {
      expect(types(events)).toEqual(expect.arrayContaining(["runtime.draining", "runtime.retired"]));
      expect(events.find((s) => s.event.type === "runtime.retired")?.event).toMatchObject({
        data: { stopped: { reason: { code: "host-stopped" }, proof: { kind: "process-exit" } } },
      });
    }
    expect(processGroupsWithEnv(CP, cp)).toHaveLength(0);
  });
});
