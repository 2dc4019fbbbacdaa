/**
 * Admission alone on warm capacity (issue 15 item 2): how many runs per second the admission
 * service admits and dispatches, and the submission → dispatched latency at a fixed offered rate.
 * Real nats-server and Redis (private), the real capacity projection, the real admission service
 * with tenant quota claims as main.ts wires it; the runtime is an in-memory responder that accepts
 * every DispatchRun and appends the run's `started` and `completed` as a runtime does (conditional
 * appends through the real event store), so placements end and the tenant's counts move as in
 * production. This measures admission, not runtimes (admission.bench.ts measures the whole stack).
 * The load (submitters, the runtime's appends, watching for `run.dispatched`) runs on its own
 * thread with its own connection (support/admission-load.worker.ts), as the API and runtimes are
 * other processes in production: this thread runs admission and the capacity projection only.
 *
 * Figures (server timestamps of `run.submitted` and `run.dispatched` read back from the stream):
 * - `admission_runs_per_s`: BENCH_ADMIT_RUNS runs submitted as fast as 32 publishers can, runs
 *   dispatched ÷ (last dispatch − first submission); CPU per run of admission's thread (admission,
 *   capacity projection), of the load thread, of the process's other threads (V8's compiler and GC
 *   helpers), of the whole process, nats-server and redis-server. After a warm-up burst of
 *   BENCH_WARM_RUNS runs (default as many as the measured burst): admission is a long-running
 *   service, and with 200 warm-up runs V8 was still compiling the hot path during the measured
 *   burst (its compiler threads took ~0.3 ms per run, as much as admission's own thread).
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
import { readFile } from "node:fs/promises";
import { Worker } from "node:worker_threads";
import { redisReservations } from "../platform/reservations.ts";
import { redisTenantClaims } from "../platform/tenant-claims.ts";
import { startNats, startRedis } from "../platform/local-servers.ts";
import { createEventStore, type StoredEvent } from "../streams/index.ts";
import type { Finish, LoadCommand, LoadDone, LoadSetup } from "./support/admission-load.worker.ts";
import { publishBeat, publishReadyRuntime } from "../test/support/fake-runtime-capacity.ts";
import { freshStreams, eventually } from "../test/support/streams.ts";
import { connectHarness } from "../platform/nats-auth/server-keys.ts";
import { cpuSnapshot, cpuSpent } from "./support/cpu.ts";
import { latencyMetric, quantile, recordMetrics, round } from "./support/results.ts";
import { loadavg } from "node:os";

/** CPU ms (user + system) of this process's main thread: admission's, without the load thread. */
const threadCpuMs = async (): Promise<number> => {
  const stat = await readFile(`/proc/self/task/${process.pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * 10; // USER_HZ is 100 on Linux
};

/**
 * Scripts redis-server has run so far (EVALSHA and EVAL, INFO commandstats, every connection): its
 * own count. Every per-run Redis call of admission is a script; commandstats counts the commands a
 * script calls as well, so those of other kinds are no count of the client's calls.
 */
const redisScripts = async (r: Redis): Promise<number> =>
  [...(await r.info("commandstats")).matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );

const BURST = Number(process.env.BENCH_ADMIT_RUNS ?? 3000);
const WARM = Number(process.env.BENCH_WARM_RUNS ?? BURST);
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
const nats = await startNats();
const redis = await startRedis();
try {
  const fx = await freshStreams(nats.url, "rate");
  // Admission and capacity on their own connection, as in production, and the load on another
  // (its own thread); both without async traces, as every service connects (platform/bootstrap.ts,
  // services/runtime/shell/start.ts).
  const noTraces = process.env.BENCH_ASYNC_TRACES !== "1";
  const store = createEventStore(fx.nc, fx.layout);
  const admNc = await connectHarness({ servers: nats.url, noAsyncTraces: noTraces });
  const js = jetstream(admNc);
  const admStore = createEventStore(admNc, fx.layout);
  const r = new Redis(redis.url, { maxRetriesPerRequest: 2, enableOfflineQueue: true }); // as platform/bootstrap.ts
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

  // The load (submitters, the runtime's appends) on its own thread (support/admission-load.worker.ts).
  // TypeScript in the worker too: tsx's loader hooks are per thread, so the worker registers them first.
  const entry = new URL("./support/admission-load.worker.ts", import.meta.url).href;
  const boot = `import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))}).then((t) => { t.register(); return import(${JSON.stringify(entry)}); })`;
  const load = new Worker(boot, {
    eval: true,
    workerData: {
      natsUrl: nats.url,
      layout: fx.layout,
      tenantId: TENANT,
      runtimeInstanceId: rt,
      noAsyncTraces: noTraces,
    } satisfies LoadSetup,
  });
  load.on("error", (e) => console.error("load thread failed", e));
  // Answers the load thread's CPU ms so far.
  const ask = (c: LoadCommand) =>
    new Promise<number>((ok) => {
      load.once("message", (m: LoadDone) => m.kind === "done" && ok(m.cpuMs));
      load.postMessage(c);
    });
  const send = async (_e: string, _t: unknown, c: RuntimeCommand): Promise<RuntimeCommandResult> => {
    if (c.operation === "DispatchRun") {
      const { tenantId, sharedRunId, localRunId, dispatchedSeq } = c.payload as Finish;
      load.postMessage({
        kind: "finish",
        run: { tenantId, sharedRunId, localRunId, dispatchedSeq },
      } satisfies LoadCommand);
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
    log: pino({ level: process.env.BENCH_LOG ?? "silent" }),
    tickMs: 250,
  });
  await adm.ready;

  // Warm-up (JIT, connections), not measured: as many runs as the burst, so V8 has compiled the hot
  // path before it is measured (see the header).
  const warm = Array.from({ length: WARM }, (_, i) => `warm-${i}`);
  await ask({ kind: "burst", ids: warm, publishers: 32 });
  const load0Ms = await ask({ kind: "drain" });

  // Burst: as fast as 32 publishers go.
  const burst = Array.from({ length: BURST }, (_, i) => `burst-${i}`);
  const load0 = loadavg()[0]!;
  const cpu0 = await cpuSnapshot();
  const self0 = process.cpuUsage();
  const main0 = await threadCpuMs();
  const scripts0 = await redisScripts(r);
  await ask({ kind: "burst", ids: burst, publishers: 32 });
  const loadMs = (await ask({ kind: "drain" })) - load0Ms;
  const mainMs = (await threadCpuMs()) - main0;
  const scripts = (await redisScripts(r)) - scripts0;
  const self = process.cpuUsage(self0);
  const children = cpuSpent(cpu0, await cpuSnapshot());
  const selfMs = (self.user + self.system) / 1000;

  // Offered rates: open loop, one submission every 1000/rate ms.
  const offered = async (rate: number): Promise<string[]> => {
    const ids = Array.from({ length: Math.round(rate * RATE_SECONDS) }, (_, i) => `r${rate}-${i}`);
    await ask({ kind: "offered", ids, rate });
    return ids;
  };
  const at200 = await offered(200);
  const at1000 = await offered(1000);
  const load1 = loadavg()[0]!;

  const log: StoredEvent[] = [];
  await store.replay({ seq: 1 }, (e) => {
    log.push(e);
  });
  const submittedAt = new Map<string, number>();
  const dispatchedAt = new Map<string, number>();
  const admittedAt = new Map<string, number>();
  for (const e of log) {
    if (e.event.type === "run.submitted") submittedAt.set(e.event.correlationId, e.time.getTime());
    if (e.event.type === "run.admitted" && !admittedAt.has(e.event.correlationId))
      admittedAt.set(e.event.correlationId, e.time.getTime());
    if (e.event.type === "run.dispatched" && !dispatchedAt.has(e.event.correlationId))
      dispatchedAt.set(e.event.correlationId, e.time.getTime());
  }
  const latencies = (ids: readonly string[]) => ids.map((id) => dispatchedAt.get(id)! - submittedAt.get(id)!);
  // Where the time goes: submitted → admitted (delivery, the pass, the capacity read, the quota claim
  // and slot reservation, the `admitted` append) and admitted → dispatched (the `dispatched` append).
  const stages = (ids: readonly string[]) => {
    const q = (xs: number[]) => `${quantile(xs, 0.5)} / ${quantile(xs, 0.99)}`;
    const toAdmitted = ids.map((id) => admittedAt.get(id)! - submittedAt.get(id)!);
    const toDispatched = ids.map((id) => dispatchedAt.get(id)! - admittedAt.get(id)!);
    return `stages p50 / p99: submitted → admitted ${q(toAdmitted)} ms, admitted → dispatched ${q(toDispatched)} ms`;
  };
  const first = Math.min(...burst.map((id) => submittedAt.get(id)!));
  const last = Math.max(...burst.map((id) => dispatchedAt.get(id)!));
  const where = `2 cores, load average ${round(load0, 1)} → ${round(load1, 1)}`;
  const perRun = (ms: number) => round(ms / burst.length);
  const metrics = {
    admission_runs_per_s: {
      unit: "runs/s",
      value: round((burst.length / (last - first)) * 1000),
      note: `${burst.length} one-step runs submitted by 32 publishers onto one warm runtime, after ${WARM} warm-up runs (in-memory responder), first submission → last dispatch (server timestamps); ${where}`,
    },
    admission_cpu_per_run: {
      unit: "ms",
      value: perRun(mainMs),
      note: `CPU per run during that burst (after ${WARM} warm-up runs): admission's thread (admission, capacity projection) ${perRun(mainMs)}; load thread (submitters, fake runtime) ${perRun(loadMs)}; the process's other threads (V8 compiler and GC helpers) ${perRun(selfMs - mainMs - loadMs)}; bench process in all ${perRun(selfMs)}, ${Object.entries(
        children,
      )
        .map(([k, v]) => `${k} ${perRun(v)}`)
        .join(", ")}; Redis script runs per run ${round(scripts / burst.length)} (EVALSHA/EVAL, INFO commandstats)`,
    },
    dispatch_latency_ms_at_200: latencyMetric(
      latencies(at200),
      `run.submitted → run.dispatched, ${at200.length} runs offered at 200 runs/s, admission alone (in-memory runtime responder); ${stages(at200)}; ${where}`,
    ),
    dispatch_latency_ms_at_1000: latencyMetric(
      latencies(at1000),
      `run.submitted → run.dispatched, ${at1000.length} runs offered at 1 000 runs/s, admission alone (in-memory runtime responder); ${stages(at1000)}; ${where}`,
    ),
  };
  await recordMetrics(metrics, { nats: "2.15.3" });
  console.log(JSON.stringify(metrics, null, 2));
  await ask({ kind: "stop" });
  await load.terminate();
  await adm.stop();
  await capacity.stop();
  r.disconnect();
  await admNc.close();
  await fx.close();
} finally {
  await nats.stop();
  await redis.stop();
}
