import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it, onTestFinished } from "vitest";
import { DroverConfig, type DroverEvent } from "../../contracts/index.ts";
import { heartbeatJson, mkEvent, readyProcessRuntime, writer } from "../support/recovery-fixture.ts";

import { createProcessStrategy } from "../../platform/hosts/process-strategy.ts";
import { processIncarnation } from "../../platform/process-incarnation.ts";
import { RecoveryState, startRecovery, type RecoveryService } from "../../services/recovery/index.ts";
import {
  createEventStore,
  execRef,
  heartbeatSubject,
  runRef,
  runtimeRef,
  type EventStore,
  type StoredEvent,
} from "../../streams/index.ts";
import { exampleDag } from "../support/example-events.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * Recovery against a real nats-server and real processes standing in for runtime hosts (a
 * `sleep`: recovery only kills hosts and reads the log; the runtime itself is proven in test/host).
 */
const CP = "cp-rec";
const config = DroverConfig.parse({ controlPlaneId: CP, heartbeatIntervalMs: 200, fenceDeadlineMs: 5000 });
const ctx = writer;
const mk = mkEvent;

describe("recovery: health → fence → reconcile (real NATS, real host processes)", () => {
  let fx: StreamsFixture, js: JetStreamClient, store: EventStore, host: ChildProcess, services: RecoveryService[];

  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "rec");
    js = jetstream(fx.nc);
    store = createEventStore(fx.nc, fx.layout);
    host = spawn("sleep", ["600"], { stdio: "ignore" });
    services = [];
  });
  afterEach(async () => {
    for (const s of services) await s.stop();
    host.kill("SIGKILL");
    await fx.close();
  });

  async function recovery(): Promise<RecoveryService> {
    const s = await startRecovery({
      js,
      config,
      layout: fx.layout,
      store,
      state: new RecoveryState(fx.layout.eventPrefix, () => undefined),
      env: ctx("test"),
      hosts: () => createProcessStrategy(),
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: pino({ level: "silent" }),
      tickMs: 50,
    });
    services.push(s);
    await s.ready;
    return s;
  }

  /** A ready runtime whose host is the `sleep` process (or a pid that is already gone). */
  const readyRuntime = (rt: string, pid: number, tenantId: string) =>
    readyProcessRuntime(store, { controlPlaneId: CP, rt, pid, tenantId });

  /** A run of `tenant` placed on `rt`: `started` with `steps` durable steps, or only dispatched. */
  async function placedRun(tenant: string, id: string, rt: string, inc: string, started: boolean, steps = 0) {
    const lr = `lr-${id}`;
    let seq = 0;
    const add = async (type: DroverEvent["type"], data: unknown, c = ctx("admission")) => {
      seq = (await store.append(runRef(tenant, id), mk(c, type, data, tenant), { expectedSeq: seq })).seq;
    };
    await add("run.submitted", { sharedRunId: id, dag: exampleDag, source: "api", labels: {} });
    await add("run.admitted", {
      runtimeInstanceId: rt,
      localRunId: lr,
      reservationId: "r",
      candidates: [],
      recovery: false,
    });
    await add("run.dispatched", { runtimeInstanceId: rt, localRunId: lr, transport: "http", hostIncarnation: inc });
    if (!started) return;
    const ex = `exec-${id}`;
    await add("run.started", { executionId: ex, localRunId: lr, runtimeInstanceId: rt }, ctx("runtime", rt));
    const events = [
      mk(
        ctx("runtime"),
        "exec.started",
        { sharedRunId: id, localRunId: lr, runtimeInstanceId: rt, dagDigest: "a".repeat(64), stepCount: 5, epoch: 0 },
        tenant,
      ),
      ...Array.from({ length: steps }, (_, i) =>
        mk(
          ctx("runtime"),
          "exec.step-completed",
          { stepId: ["a", "b", "c", "d", "e"][i], attempt: 1, output: {}, outputDigest: "b".repeat(64), durationMs: 1 },
          tenant,
        ),
      ),
    ];
    await store.appendAll(execRef(tenant, ex), events, { expectedSeq: 0 });
  }

  const all = async (): Promise<StoredEvent[]> => {
    const out: StoredEvent[] = [];
    await store.replay({ seq: 1 }, (e) => {
      out.push(e);
    });
    return out;
  };

  it("recovers an exited host's in-flight execution and local-queued run, and leaves the safe tenant's run untouched", async () => {
    const dead = spawn("sleep", ["600"], { stdio: "ignore" });
    await eventually("impacted host running", async () => {
      try {
        return processIncarnation(dead.pid!);
      } catch {
        return undefined;
      }
    });
    const incA = await readyRuntime("rt-imp", dead.pid!, "t-imp");
    dead.kill("SIGKILL");
    await new Promise((r) => dead.once("exit", r));
    const incS = await readyRuntime("rt-safe", host.pid!, "t-safe");
    // The safe runtime is healthy: it beats every interval for the whole test, as a live runtime does.
    // (A single beat went stale past the 600 ms bound when the machine was loaded: a false suspicion.)
    let beat = 0;
    const safeBeat = () =>
      js.publish(
        heartbeatSubject(fx.layout, "rt-safe"),
        heartbeatJson("rt-safe", incS, ++beat, {
          at: new Date().toISOString(),
          activeWorkers: 1,
          availableWorkers: 0,
          runningRuns: 1,
          availableSlots: 2,
        }),
      );
    await safeBeat();
    const beating = setInterval(() => void safeBeat().catch(() => undefined), config.heartbeatIntervalMs);
    onTestFinished(() => clearInterval(beating));
    await placedRun("t-imp", "run-inflight", "rt-imp", incA, true, 3);
    await placedRun("t-imp", "run-queued", "rt-imp", incA, false);
    await placedRun("t-safe", "run-safe", "rt-safe", incS, true, 2);
    await store.append(
      runtimeRef("rt-imp"),
      mk(ctx("test"), "runtime.host-exited", {
        hostIncarnation: incA,
        kind: "exited",
        exitCode: 0,
        signal: null,
        detail: "",
      }),
      { expectedSeq: await store.lastSeq(runtimeRef("rt-imp")) },
    );
    // Two recovery replicas race on the same incident: conditional appends must leave one of everything.
    await Promise.all([recovery(), recovery()]);
    await eventually("recovery planned", async () =>
      (await all()).some((e) => e.event.type === "runtime.recovery-planned") ? true : undefined,
    );
    const log = await all();
    const types = (pred: (e: StoredEvent) => boolean) => log.filter(pred).map((e) => e.event.type);
    const rtTypes = types((e) => e.subject.includes(".runtime.rt-imp."));
    for (const t of ["runtime.suspected", "runtime.fenced", "runtime.recovery-planned"])
      expect(rtTypes.filter((x) => x === t)).toHaveLength(1);
    const fenced = log.find((e) => e.event.type === "runtime.fenced")!;
    // nothing moves before fenced: every recovery transition has a later sequence
    for (const e of log.filter(
      (x) =>
        x.event.type.startsWith("forensics.") ||
        x.event.type.includes("requeued") ||
        x.event.type === "exec.paused-for-recovery",
    ))
      expect(e.seq).toBeGreaterThan(fenced.seq);
    expect(types((e) => e.subject.includes(".run.t-imp.run-inflight."))).toContain("run.requeued-for-resume");
    expect(types((e) => e.subject.includes(".exec.t-imp.exec-run-inflight."))).toContain("exec.paused-for-recovery");
    const paused = log.find((e) => e.event.type === "exec.paused-for-recovery")!;
    expect(paused.event.type === "exec.paused-for-recovery" && paused.event.data.newEpoch).toBe(1);
    expect(types((e) => e.subject.includes(".run.t-imp.run-queued."))).toContain(
      "run.requeued-for-local-queued-recovery",
    );
    expect(
      log.filter(
        (e) =>
          e.subject.includes(".t-safe.") &&
          (e.event.type.startsWith("forensics.") ||
            e.event.type.includes("requeued") ||
            e.event.type.includes("paused")),
      ),
    ).toEqual([]);
    expect(
      log.filter(
        (e) =>
          e.subject.includes(".runtime.rt-safe.") &&
          (e.event.type === "runtime.suspected" || e.event.type === "runtime.fenced"),
      ),
    ).toEqual([]);
    const records = log.filter((e) => e.event.type === "forensics.execution-recovery-candidate-detected");
    expect(records.map((e) => e.subject.split(".").slice(-2, -1)[0]).sort()).toEqual([
      "runtime-recovery:exec-run-inflight:run-inflight:lr-run-inflight",
      "runtime-recovery:local-queued:run-queued:lr-run-queued",
    ]);
    expect(types((e) => e.subject.includes(".run.t-imp.")).filter((t) => t.startsWith("run.requeued"))).toHaveLength(2);
  });

  it("suspects a runtime whose heartbeat went stale and fences it by killing exactly its host incarnation", async () => {
    const inc = await readyRuntime("rt-stale", host.pid!, "t-x");
    await js.publish(
      heartbeatSubject(fx.layout, "rt-stale"),
      heartbeatJson("rt-stale", inc, 1, { at: new Date(Date.now() - 60_000).toISOString() }),
    );
    const exited = new Promise<string | null>((ok) => host.once("exit", (_c, sig) => ok(sig)));
    await recovery();
    const fenced = await eventually("fenced", async () => (await all()).find((e) => e.event.type === "runtime.fenced"));
    expect(fenced.event.type === "runtime.fenced" && fenced.event.data.proof).toMatchObject({
      kind: "process-exit",
      pid: host.pid,
    });
    expect(await exited).toBe("SIGKILL");
    const suspected = (await all()).find((e) => e.event.type === "runtime.suspected")!;
    expect(suspected.event.type === "runtime.suspected" && suspected.event.data.reason.code).toBe("heartbeat-stale");
  });
});
