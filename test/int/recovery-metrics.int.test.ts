import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { DroverConfig, staleHeartbeatMsOf, type DroverEvent } from "../../contracts/index.ts";
import { createProcessStrategy } from "../../platform/hosts/process-strategy.ts";
import { startOpsServer, type OpsServer } from "../../platform/ops-server.ts";
import { RecoveryState, registerRecoveryMetrics, startRecovery } from "../../services/recovery/index.ts";
import type { RecoveryService } from "../../services/recovery/index.ts";
import {
  createEventStore,
  execRef,
  heartbeatSubject,
  runRef,
  runtimeRef,
  type EventStore,
} from "../../streams/index.ts";
import { exampleDag } from "../support/example-events.ts";
import { heartbeatJson, mkEvent, readyProcessRuntime, startSleepHost, writer } from "../support/recovery-fixture.ts";
import { sample, scrape } from "../support/scrape.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * Recovery's metrics as Prometheus scrapes them from the ops listener (platform/ops-server.ts),
 * with recovery running against a real nats-server and real processes standing in for runtime
 * hosts: failure → fenced and failure → resumed histograms (by what the failure time is measured
 * from) and the open-incidents gauge, each moving as an incident goes through its stages.
 */
const CP = "cp-recm";
const config = DroverConfig.parse({ controlPlaneId: CP, heartbeatIntervalMs: 200, fenceDeadlineMs: 5000 });
const ctx = writer;
const mk = mkEvent;
const FENCED = "drover_recovery_failure_to_fenced_seconds";
const RESUMED = "drover_recovery_failure_to_resumed_seconds";

describe("recovery metrics on /metrics (real NATS, real host processes, scraped over HTTP)", () => {
  let fx: StreamsFixture, js: JetStreamClient, store: EventStore, ops: OpsServer, svc: RecoveryService;
  const hosts: ChildProcess[] = [];
  const beaters: ReturnType<typeof setInterval>[] = [];

  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "recm");
    js = jetstream(fx.nc);
    store = createEventStore(fx.nc, fx.layout);
    ops = await startOpsServer({
      service: "recovery",
      instanceId: "rec-1",
      log: pino({ level: "silent" }),
      nc: fx.nc,
      jsm: fx.jsm,
      layout: fx.layout,
    });
  });
  afterEach(async () => {
    for (const t of beaters.splice(0)) clearInterval(t);
    await svc?.stop();
    await ops.close();
    for (const h of hosts.splice(0)) h.kill("SIGKILL");
    await fx.close();
  });

  const startHost = () => startSleepHost(hosts);

  async function startRecoveryWithMetrics(): Promise<void> {
    const state = new RecoveryState(fx.layout.eventPrefix, () => undefined);
    svc = await startRecovery({
      js,
      config,
      layout: fx.layout,
      store,
      state,
      env: ctx("test"),
      hosts: () => createProcessStrategy(),
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: pino({ level: "silent" }),
      tickMs: 50,
    });
    await svc.ready;
    registerRecoveryMetrics(ops.registry, state, CP);
  }

  const readyRuntime = (rt: string, pid: number, tenantId: string) =>
    readyProcessRuntime(store, { controlPlaneId: CP, rt, pid, tenantId });

  /** A started run of `tenant` on `rt` with three durable steps done. */
  async function runningRun(tenant: string, id: string, rt: string, inc: string): Promise<void> {
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
    await add("run.started", { executionId: `exec-${id}`, localRunId: lr, runtimeInstanceId: rt }, ctx("runtime", rt));
    const step = (stepId: string) =>
      mk(
        ctx("runtime"),
        "exec.step-completed",
        { stepId, attempt: 1, output: {}, outputDigest: "b".repeat(64), durationMs: 1 },
        tenant,
      );
    await store.appendAll(
      execRef(tenant, `exec-${id}`),
      [
        mk(
          ctx("runtime"),
          "exec.started",
          { sharedRunId: id, localRunId: lr, runtimeInstanceId: rt, dagDigest: "a".repeat(64), stepCount: 5, epoch: 0 },
          tenant,
        ),
        step("a"),
        step("b"),
        step("c"),
      ],
      { expectedSeq: 0 },
    );
  }

  /** Heartbeats of `rt` every 100 ms (a third of its interval) until stopped. */
  function beating(rt: string, inc: string) {
    let n = 0;
    const beat = () => void js.publish(heartbeatSubject(fx.layout, rt), heartbeatJson(rt, inc, ++n)).catch(() => {});
    beat();
    const timer = setInterval(beat, 100);
    beaters.push(timer);
    return { stop: () => clearInterval(timer) };
  }

  const metric = async (name: string, labels: Record<string, string> = {}) =>
    sample(await scrape(ops.port), name, { service: "recovery", ...labels });
  const reaches = (name: string, labels: Record<string, string>, value: number) =>
    eventually(`${name} ${JSON.stringify(labels)} = ${value}`, async () =>
      (await metric(name, labels)) === value ? true : undefined,
    );

  it("a host's exit: open incidents 0 → 1 → 0, failure → fenced and → resumed timed from the recorded exit", async () => {
    await startRecoveryWithMetrics();
    expect(await metric("drover_incidents_open")).toBe(0);
    expect(await metric(`${FENCED}_count`, { basis: "host-exit" })).toBeUndefined();

    const host = await startHost();
    const inc = await readyRuntime("rt-imp", host.pid!, "t-imp");
    // It beats, as a live runtime does, until its exit is fenced: silent, it would be stale 600 ms
    // after its capacity was published, and a set-up slower than that (a loaded machine) had
    // recovery fence it on its heartbeat and kill its host before the test recorded the exit.
    const beats = beating("rt-imp", inc);
    await runningRun("t-imp", "run-1", "rt-imp", inc);
    expect(await metric("drover_incidents_open")).toBe(0);
    host.kill("SIGKILL");
    if (host.exitCode === null && host.signalCode === null) await new Promise((r) => host.once("exit", r));
    const exitedAt = Date.now();
    await store.append(
      runtimeRef("rt-imp"),
      mk(ctx("test"), "runtime.host-exited", {
        hostIncarnation: inc,
        kind: "exited",
        exitCode: null,
        signal: "SIGKILL",
        detail: "",
      }),
      { expectedSeq: await store.lastSeq(runtimeRef("rt-imp")) },
    );

    await reaches(`${FENCED}_count`, { basis: "host-exit" }, 1);
    beats.stop();
    const fencedAfter = (await metric(`${FENCED}_sum`, { basis: "host-exit" }))!;
    expect(fencedAfter).toBeGreaterThanOrEqual(0);
    expect(fencedAfter).toBeLessThan((Date.now() - exitedAt) / 1000 + 0.5);
    await reaches("drover_incidents_open", {}, 1); // planned, its in-flight item not recovered yet
    expect(await metric(`${FENCED}_count`, { basis: "last-heartbeat" })).toBeUndefined();

    // The replacement runtime resumes the execution (what a runtime appends on ResumeExecution).
    const execSeq = await store.lastSeq(execRef("t-imp", "exec-run-1"));
    await store.append(
      execRef("t-imp", "exec-run-1"),
      mk(
        ctx("runtime"),
        "exec.resumed",
        { runtimeInstanceId: "rt-new", localRunId: "lr-2", epoch: 1, completedSteps: 3 },
        "t-imp",
      ),
      { expectedSeq: execSeq },
    );
    await reaches(`${RESUMED}_count`, { basis: "host-exit" }, 1);
    expect(await metric(`${RESUMED}_sum`, { basis: "host-exit" })).toBeGreaterThanOrEqual(fencedAfter);
    expect(await metric("drover_incidents_open")).toBe(1);

    // The run ends: recovery ends the item's forensics record, and the incident closes.
    await store.append(
      runRef("t-imp", "run-1"),
      mk(
        ctx("runtime"),
        "run.completed",
        { executionId: "exec-run-1", localRunId: "lr-2", outputDigest: "c".repeat(64) },
        "t-imp",
      ),
      { expectedSeq: await store.lastSeq(runRef("t-imp", "run-1")) },
    );
    await reaches("drover_incidents_open", {}, 0);
    expect(await metric(`${FENCED}_count`, { basis: "host-exit" })).toBe(1);
  });

  it("a silent runtime: failure → fenced timed from its last heartbeat, so at least the staleness bound", async () => {
    const host = await startHost();
    const inc = await readyRuntime("rt-silent", host.pid!, "t-x");
    await js.publish(heartbeatSubject(fx.layout, "rt-silent"), heartbeatJson("rt-silent", inc, 1));
    await startRecoveryWithMetrics();
    await reaches(`${FENCED}_count`, { basis: "last-heartbeat" }, 1);
    expect(await metric(`${FENCED}_sum`, { basis: "last-heartbeat" })).toBeGreaterThanOrEqual(
      staleHeartbeatMsOf(config) / 1000,
    );
    // Nothing of it to recover: planned with no items, the incident is closed.
    await reaches("drover_incidents_open", {}, 0);
    expect(await metric(`${FENCED}_count`, { basis: "host-exit" })).toBeUndefined();
  });
});
