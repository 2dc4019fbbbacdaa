/**
 * Admission alone on warm capacity (issue 15 item 2): how many runs per second the admission
 * service admits and dispatches, and the submission → dispatched latency at a fixed offered rate.
 * Real nats-server and Redis (private), the real capacity projection, the real admission service
 * with tenant quota claims as main.ts wires it; the runtime is an in-memory responder that accepts
 * every DispatchRun and appends the run's `started` and `completed` as a runtime does (conditional
 * appends through the real event store), so placements end and the tenant's counts move as in
 * production. This measures admission, not runtimes (admission.bench.ts measures the whole stack).
 *
 * Figures (server timestamps of `run.submitted` and `run.dispatched` read back from the stream):
 * - `admission_runs_per_s`: BENCH_ADMIT_RUNS runs submitted as fast as 32 publishers can, runs
 *   dispatched ÷ (last dispatch − first submission); CPU per run of this process (admission,
 *   capacity projection, submitters, fake runtime) and of nats-server and redis-server.
 * - `dispatch_latency_ms_at_200` / `_at_1000`: runs submitted open-loop at 200 and 1 000 runs/s
 *   (BENCH_RATE_SECONDS each), p50/p99 of submission → dispatched.
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
import { redisTenantClaims } from "../platform/tenant-claims.ts";
import { startNats, startRedis } from "../platform/local-servers.ts";
import { createEventStore, eventTypeFilter, runRef, type StoredEvent } from "../streams/index.ts";
import { looseEvent } from "../test/support/loose-event.ts";
import { publishBeat, publishReadyRuntime } from "../test/support/fake-runtime-capacity.ts";
import { freshStreams, eventually } from "../test/support/streams.ts";
import { connectHarness } from "../platform/nats-auth/server-keys.ts";
import { cpuSnapshot, cpuSpent } from "./support/cpu.ts";
import { latencyMetric, recordMetrics, round } from "./support/results.ts";
import { loadavg } from "node:os";

const BURST = Number(process.env.BENCH_ADMIT_RUNS ?? 3000);
const RATE_SECONDS = Number(process.env.BENCH_RATE_SECONDS ?? 5);
const CP = "cp-rate";
const TENANT = "t-rate";
const config = DroverConfig.parse({
  controlPlaneId: CP,
  heartbeatIntervalMs: 1000,
  staleHeartbeatMs: 600_000, // the fake runtime beats once
  dispatchTimeoutMs: 3000,
  tenants: [{ tenantId: TENANT, isolationMode: "dedicated", maxConcurrentRuns: 100_000, maxQueuedRuns: 100_000 }],
});
const dag = { steps: [{ id: "only", kind: "compute", params: { durationMs: 0 } }] };
const runtimeEnv = {
  writer: { service: "runtime" as const, instanceId: "fake-rt" },
  clock: systemClock,
  ids: randomIds,
};
const apiEnv = { writer: { service: "api" as const, instanceId: "bench" }, clock: systemClock, ids: randomIds };

const nats = await startNats();
const redis = await startRedis();
try {
  const fx = await freshStreams(nats.url, "rate");
  const store = createEventStore(fx.nc, fx.layout);
  // Admission and capacity on their own connection, as in production (submitters and the fake
  // runtime share the fixture's), with the async traces main.ts sets (platform/bootstrap.ts).
  const admNc = await connectHarness({ servers: nats.url, noAsyncTraces: process.env.BENCH_ASYNC_TRACES !== "1" });
  const js = jetstream(admNc);
  const admStore = createEventStore(admNc, fx.layout);
  const r = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  const view = redisCapacityView<CapacityDescriptor>(r, CP);
  const capacity = await startCapacityProjection({ js, layout: fx.layout, view, controlPlaneId: CP });
  const rt = "rt-rate";
  await publishReadyRuntime(store, {
    runtimeInstanceId: rt,
    controlPlaneId: CP,
    isolationMode: "dedicated",
    tenantId: TENANT,
    slots: 10_001,
  });
  await publishBeat(js, fx.layout, rt, 1, 10_001);
  await eventually("capacity", async () => ((await view.all()).some((d) => d.beats["pid:1:1"]) ? true : undefined));

  // The runtime: accepts every DispatchRun, then records the run started and completed on the
  // `dispatched` sequence, as the real runtime's conditional appends do.
  const finishing = new Set<Promise<unknown>>();
  const finish = async (p: { tenantId: string; sharedRunId: string; localRunId: string; dispatchedSeq: number }) => {
    const ref = runRef(p.tenantId, p.sharedRunId);
    const opts = { tenantId: p.tenantId, correlationId: p.sharedRunId, causationId: `run:${p.localRunId}` };
    const executionId = randomIds.next("ex");
    const started = looseEvent(
      runtimeEnv,
      "run.started",
      { executionId, localRunId: p.localRunId, runtimeInstanceId: rt },
      opts,
    );
    const completed = looseEvent(
      runtimeEnv,
      "run.completed",
      { executionId, localRunId: p.localRunId, outputDigest: "0" },
      opts,
    );
    await store.appendAll(ref, [started, completed], { expectedSeq: p.dispatchedSeq });
  };
  const send = async (_e: string, _t: unknown, c: RuntimeCommand): Promise<RuntimeCommandResult> => {
    if (c.operation === "DispatchRun") {
      const f = finish(c.payload as never).catch(() => undefined);
      finishing.add(f);
      void f.finally(() => finishing.delete(f));
    }
    return {
      success: true,
      operation: c.operation,
      runtimeInstanceId: c.runtimeInstanceId,
      hostIncarnation: "pid:1:1" as never,
      payload: {},
      timings: { receivedAt: new Date().toISOString(), handledMs: 0 },
    };
  };
  const index = new RunIndex(fx.layout.eventPrefix, () => undefined, systemClock);
  const adm = await startAdmission({
    js,
    config,
    layout: fx.layout,
    store: admStore,
    index,
    view,
    reservations: redisReservations(r, CP),
    claims: redisTenantClaims(r, CP),
    env: { writer: { service: "admission", instanceId: "adm-bench" }, clock: systemClock, ids: randomIds },
    send: send as never,
    commandTokenFor: () => "token",
    sha256: (x) => createHash("sha256").update(x).digest("hex"),
    log: pino({ level: "silent" }),
    tickMs: 250,
  });
  await adm.ready;

  const dispatched = new Set<string>();
  const sub = fx.nc.subscribe(eventTypeFilter(fx.layout, "run.dispatched"));
  let onDispatch = (): void => {};
  void (async () => {
    for await (const m of sub) {
      dispatched.add((m.json() as { correlationId: string }).correlationId);
      onDispatch();
    }
  })();
  const allDispatched = (ids: readonly string[]) =>
    new Promise<void>((ok, fail) => {
      const t = setTimeout(
        () => fail(new Error(`${ids.filter((i) => !dispatched.has(i)).length} runs not dispatched in 120 s`)),
        120_000,
      );
      onDispatch = () => {
        if (ids.every((i) => dispatched.has(i))) {
          clearTimeout(t);
          ok();
        }
      };
      onDispatch();
    });
  const submit = (id: string) =>
    store.append(
      runRef(TENANT, id),
      looseEvent(
        apiEnv,
        "run.submitted",
        { sharedRunId: id, dag, source: "api", labels: {} },
        {
          tenantId: TENANT,
          correlationId: id,
          causationId: "bench",
        },
      ),
      { expectedSeq: 0 },
    );

  // Warm-up (JIT, connections), not measured.
  const warm = Array.from({ length: 200 }, (_, i) => `warm-${i}`);
  await Promise.all(warm.map(submit));
  await allDispatched(warm);

  // Burst: as fast as 32 publishers go.
  const burst = Array.from({ length: BURST }, (_, i) => `burst-${i}`);
  const load0 = loadavg()[0]!;
  const cpu0 = await cpuSnapshot();
  const self0 = process.cpuUsage();
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < burst.length) await submit(burst[next++]!);
    }),
  );
  await allDispatched(burst);
  await Promise.all([...finishing]);
  const self = process.cpuUsage(self0);
  const children = cpuSpent(cpu0, await cpuSnapshot());
  const selfMs = (self.user + self.system) / 1000;

  // Offered rates: open loop, one submission every 1000/rate ms.
  const offered = async (rate: number): Promise<string[]> => {
    const ids = Array.from({ length: Math.round(rate * RATE_SECONDS) }, (_, i) => `r${rate}-${i}`);
    const t0 = performance.now();
    const pending: Promise<unknown>[] = [];
    for (const [i, id] of ids.entries()) {
      const due = t0 + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((ok) => setTimeout(ok, wait));
      pending.push(submit(id));
    }
    await Promise.all(pending);
    await allDispatched(ids);
    return ids;
  };
  const at200 = await offered(200);
  const at1000 = await offered(1000);
  const load1 = loadavg()[0]!;
  sub.unsubscribe();

  const log: StoredEvent[] = [];
  await store.replay({ seq: 1 }, (e) => {
    log.push(e);
  });
  const submittedAt = new Map<string, number>();
  const dispatchedAt = new Map<string, number>();
  for (const e of log) {
    if (e.event.type === "run.submitted") submittedAt.set(e.event.correlationId, e.time.getTime());
    if (e.event.type === "run.dispatched" && !dispatchedAt.has(e.event.correlationId))
      dispatchedAt.set(e.event.correlationId, e.time.getTime());
  }
  const latencies = (ids: readonly string[]) => ids.map((id) => dispatchedAt.get(id)! - submittedAt.get(id)!);
  const first = Math.min(...burst.map((id) => submittedAt.get(id)!));
  const last = Math.max(...burst.map((id) => dispatchedAt.get(id)!));
  const where = `2 cores, load average ${round(load0, 1)} → ${round(load1, 1)}`;
  const perRun = (ms: number) => round(ms / burst.length);
  const metrics = {
    admission_runs_per_s: {
      unit: "runs/s",
      value: round((burst.length / (last - first)) * 1000),
      note: `${burst.length} one-step runs submitted by 32 publishers onto one warm runtime (in-memory responder), first submission → last dispatch (server timestamps); ${where}`,
    },
    admission_cpu_per_run: {
      unit: "ms",
      value: perRun(selfMs),
      note: `CPU per run during that burst: bench process (admission, capacity projection, submitters, fake runtime) ${perRun(selfMs)}, ${Object.entries(
        children,
      )
        .map(([k, v]) => `${k} ${perRun(v)}`)
        .join(", ")}`,
    },
    dispatch_latency_ms_at_200: latencyMetric(
      latencies(at200),
      `run.submitted → run.dispatched, ${at200.length} runs offered at 200 runs/s, admission alone (in-memory runtime responder); ${where}`,
    ),
    dispatch_latency_ms_at_1000: latencyMetric(
      latencies(at1000),
      `run.submitted → run.dispatched, ${at1000.length} runs offered at 1 000 runs/s, admission alone (in-memory runtime responder); ${where}`,
    ),
  };
  await recordMetrics(metrics, { nats: "2.15.3" });
  console.log(JSON.stringify(metrics, null, 2));
  await adm.stop();
  await capacity.stop();
  r.disconnect();
  await admNc.close();
  await fx.close();
} finally {
  await nats.stop();
  await redis.stop();
}
