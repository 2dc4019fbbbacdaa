/**
 * The cost of an admission pass over a large backlog (docs/security.md "Floods"), against a private
 * nats-server and Redis with the real capacity projection and the real admission service (the
 * runtime's command transport is an in-memory responder that accepts every command: this measures
 * admission, not runtimes). Tenant `t-flood` submits BENCH_BACKLOG one-step runs at once onto one
 * shared runtime that holds 4 of them; tenant `t-steady` has its own runtime with room to spare.
 * Figures: the time until every flood run carries its queue decision, the duration of a pass that
 * finds nothing new (`nextPass`), and a steady run's submission → dispatched latency (server
 * timestamps) while the backlog waits.
 */
import { createHash } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { pino } from "pino";
import { DroverConfig, type RuntimeCommand, type RuntimeCommandResult } from "../contracts/index.ts";
import type { CapacityDescriptor } from "../aggregates/capacity/descriptor.ts";
import { RunIndex, startAdmission } from "../services/admission/index.ts";
import { startCapacityProjection } from "../services/capacity/index.ts";
import { redisCapacityView } from "../platform/capacity-view.ts";
import { randomIds, systemClock } from "../platform/envelope.ts";
import { redisReservations } from "../platform/reservations.ts";
import { startNats, startRedis } from "../platform/local-servers.ts";
import { createEventStore, runRef } from "../streams/index.ts";
import { looseEvent } from "../test/support/loose-event.ts";
import { publishBeat, publishReadyRuntime } from "../test/support/fake-runtime-capacity.ts";
import { freshStreams, eventually } from "../test/support/streams.ts";
import { latencyMetric, recordMetrics, round } from "./support/results.ts";

const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 10_000);
const CP = "cp-pass";
const config = DroverConfig.parse({
  controlPlaneId: CP,
  heartbeatIntervalMs: 1000,
  staleHeartbeatMs: 600_000, // the fake runtimes beat once
  dispatchTimeoutMs: 60_000, // reservations outlive the bench: the flood's runtime stays full
  tenants: [
    { tenantId: "t-flood", isolationMode: "shared", maxConcurrentRuns: 100_000, maxQueuedRuns: 100_000 },
    { tenantId: "t-steady", isolationMode: "dedicated", maxConcurrentRuns: 1000 },
  ],
});
const dag = { steps: [{ id: "only", kind: "compute", params: { durationMs: 0 } }] };

const nats = await startNats();
const redis = await startRedis();
try {
  const fx = await freshStreams(nats.url, "pass");
  const js = jetstream(fx.nc);
  const store = createEventStore(fx.nc, fx.layout);
  const r = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  const view = redisCapacityView<CapacityDescriptor>(r, CP);
  const capacity = await startCapacityProjection({ js, layout: fx.layout, view, controlPlaneId: CP });
  await publishReadyRuntime(store, {
    runtimeInstanceId: "rt-shared",
    controlPlaneId: CP,
    isolationMode: "shared",
    slots: 4,
  });
  await publishReadyRuntime(store, {
    runtimeInstanceId: "rt-steady",
    controlPlaneId: CP,
    isolationMode: "dedicated",
    tenantId: "t-steady",
    slots: 500,
  });
  await publishBeat(js, fx.layout, "rt-shared", 1, 4);
  await publishBeat(js, fx.layout, "rt-steady", 1, 500);
  await eventually("capacity", async () =>
    (await view.all()).filter((d) => d.beats["pid:1:1"]).length === 2 ? true : undefined,
  );

  const env = { writer: { service: "api" as const, instanceId: "bench" }, clock: systemClock, ids: randomIds };
  const submit = (tenantId: string, id: string) =>
    store.append(
      runRef(tenantId, id),
      looseEvent(
        env,
        "run.submitted",
        { sharedRunId: id, dag, source: "api", labels: {} },
        {
          tenantId,
          correlationId: id,
          causationId: "bench",
        },
      ),
      { expectedSeq: 0 },
    );
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < BACKLOG) await submit("t-flood", `flood-${next++}`);
    }),
  );

  const send = async (_e: string, _t: unknown, c: RuntimeCommand): Promise<RuntimeCommandResult> => ({
    success: true,
    operation: c.operation,
    runtimeInstanceId: c.runtimeInstanceId,
    hostIncarnation: "pid:1:1" as never,
    payload: {},
    timings: { receivedAt: new Date().toISOString(), handledMs: 1 },
  });
  const index = new RunIndex(fx.layout.eventPrefix, () => undefined, systemClock);
  const started = Date.now();
  const adm = await startAdmission({
    js,
    config,
    layout: fx.layout,
    store,
    index,
    view,
    reservations: redisReservations(r, CP),
    env: { writer: { service: "admission", instanceId: "adm-bench" }, clock: systemClock, ids: randomIds },
    send: send as never,
    commandTokenFor: () => "token",
    sha256: (x) => createHash("sha256").update(x).digest("hex"),
    log: pino({ level: "silent" }),
    tickMs: 250,
  });
  await adm.ready;
  const floodRuns = () => [...index.runs.values()].filter((x) => x.tenantId === "t-flood");
  await eventually(
    "every flood run decided",
    async () => (floodRuns().every((x) => x.state.status !== "submitted") ? true : undefined),
    1_800_000,
  );
  const sweepMs = Date.now() - started;
  const placed = floodRuns().filter((x) => x.state.status === "dispatched").length;

  const passes: number[] = [];
  for (let i = 0; i < 30; i++) {
    const t0 = performance.now();
    await adm.nextPass();
    passes.push(performance.now() - t0);
  }

  const steady: number[] = [];
  for (let i = 0; i < 30; i++) {
    const id = `steady-${i}`;
    await submit("t-steady", id);
    const run = await eventually(
      "steady run dispatched",
      async () => {
        const x = index.get("t-steady", id);
        return x?.state.status === "dispatched" ? x : undefined;
      },
      120_000,
    );
    steady.push(run.sinceMs - run.submittedMs!);
  }

  const metrics = {
    admission_backlog_sweep: {
      unit: "s",
      value: round(sweepMs / 1000),
      note: `admission start → every one of ${BACKLOG} flood runs decided (${placed} placed, the rest queued), one shared runtime of 4 places`,
    },
    admission_pass_idle_backlog: latencyMetric(
      passes.map((x) => round(x)),
      `duration of an admission pass that finds nothing new, ${BACKLOG - placed} runs queued behind a full runtime`,
    ),
    dispatch_latency_backlog: latencyMetric(
      steady,
      `another tenant's run.submitted → run.dispatched while ${BACKLOG - placed} runs of a flood wait (server timestamps)`,
    ),
  };
  await recordMetrics(metrics, { nats: "2.15.3" });
  console.log(JSON.stringify(metrics, null, 2));
  await adm.stop();
  await capacity.stop();
  r.disconnect();
  await fx.close();
} finally {
  await nats.stop();
  await redis.stop();
}
