/**
 * Restart time of admission, recovery and the api's open-runs view on a long log, with and without a snapshot, and the
 * memory the run index holds after many finished runs (run with tsx: `make bench`). Private
 * nats-server and Redis. The stream gets BENCH_SNAPSHOT_EVENTS events (default 200,000; the issue's
 * figure is 1,000,000): finished runs (`submitted`, `rejected`), written by a batch publisher.
 *  - restart: time from calling start to "caught up" (ready), first with no snapshot (fold from 1),
 *    then from the snapshot the first start wrote, with a 1,000-event tail after it;
 *  - memory: heap held by the folded run index after the fold from 1, with the default bound on
 *    terminal runs (10,000) and without one (BENCH_SNAPSHOT_UNBOUNDED=0 skips the unbounded fold).
 */
import { createHash } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { pino } from "pino";
import type { CapacityDescriptor } from "../aggregates/capacity/descriptor.ts";
import { DroverConfig, encodeEvent, type DroverEvent } from "../contracts/index.ts";
import { redisCapacityView } from "../platform/capacity-view.ts";
import { randomIds, systemClock, type EnvelopeContext } from "../platform/envelope.ts";
import { startNats, startRedis } from "../platform/local-servers.ts";
import { connectHarness } from "../platform/nats-auth/server-keys.ts";
import { setupNats } from "../platform/nats-setup.ts";
import { redisReservations } from "../platform/reservations.ts";
import { createSnapshotStore } from "../platform/snapshots/store.ts";
import { RunIndex, startAdmission } from "../services/admission/index.ts";
import { RecoveryState, startRecovery } from "../services/recovery/index.ts";
import { startOpenRunsProjection } from "../services/api/index.ts";
import { createEventStore, DEFAULT_LAYOUT } from "../streams/index.ts";
import { exampleDag } from "../test/support/example-events.ts";
import { looseEvent } from "../test/support/loose-event.ts";
import { recordMetrics, round, type Metric } from "./support/results.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
const N = Number(process.env.BENCH_SNAPSHOT_EVENTS ?? 200_000);
const UNBOUNDED = process.env.BENCH_SNAPSHOT_UNBOUNDED !== "0";
const CP = "cp-bench-snap";
const config = DroverConfig.parse({ controlPlaneId: CP, tenants: [{ tenantId: "t-old", isolationMode: "dedicated" }] });
const producer: EnvelopeContext = {
  writer: { service: "api", instanceId: "api-1" },
  clock: systemClock,
  ids: randomIds,
};
const admissionCtx: EnvelopeContext = {
  writer: { service: "admission", instanceId: "adm-old" },
  clock: systemClock,
  ids: randomIds,
};
const log = pino({ level: process.env.BENCH_LOG ?? "silent" });
const layout = DEFAULT_LAYOUT;

const [nats, redisServer] = await Promise.all([startNats(), startRedis()]);
const nc = await connectHarness({ servers: nats.url });
const js = jetstream(nc);
const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 1 });
try {
  await setupNats(await jetstreamManager(nc), layout);
  const store = createEventStore(nc, layout);

  /** Publishes `runs` finished runs (2 events each) from run number `from`, `window` publishes in flight. */
  async function finishedRuns(from: number, runs: number, window = 1_000): Promise<void> {
    let inflight: Promise<unknown>[] = [];
    for (let i = from; i < from + runs; i++) {
      const id = `run-${i}`;
      const opts = { tenantId: "t-old", correlationId: id, causationId: "bench" };
      const events: DroverEvent[] = [
        looseEvent(producer, "run.submitted", { sharedRunId: id, dag: exampleDag, source: "api", labels: {} }, opts),
        looseEvent(admissionCtx, "run.rejected", { reason: { code: "tenant-quota-exceeded", detail: "bench" } }, opts),
      ];
      for (const e of events)
        inflight.push(
          js.publish(`${layout.eventPrefix}.run.t-old.${id}.${e.type.slice(4)}`, encodeEvent(e), { timeout: 60_000 }),
        );
      if (inflight.length >= window) {
        await Promise.all(inflight);
        inflight = [];
      }
    }
    await Promise.all(inflight);
  }

  const t0 = performance.now();
  await finishedRuns(0, N / 2);
  const writeS = (performance.now() - t0) / 1000;
  console.log(`[bench] ${N} events written in ${writeS.toFixed(1)} s`);

  const policy = { everyEvents: 1e12, everyMs: 1e9 };
  async function admission(maxTerminalRuns: number | undefined) {
    const index = new RunIndex(layout.eventPrefix, () => undefined, systemClock);
    index.maxTerminalRuns = maxTerminalRuns;
    const start = performance.now();
    const s = await startAdmission({
      js,
      config,
      layout,
      store,
      index,
      view: redisCapacityView<CapacityDescriptor>(redis, CP),
      reservations: redisReservations(redis, CP),
      env: { ...admissionCtx, writer: { service: "admission", instanceId: "adm-bench" } },
      send: () => Promise.reject(new Error("no runtime in this bench")),
      commandTokenFor: () => "token",
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log,
      snapshots: { store: createSnapshotStore(nc, layout, "admission"), policy },
    });
    await s.ready;
    const ms = performance.now() - start;
    gc();
    const heapMb = process.memoryUsage().heapUsed / 2 ** 20;
    return { ms, heapMb, runs: index.runs.size, s };
  }
  async function recovery() {
    const state = new RecoveryState(layout.eventPrefix, () => undefined);
    state.bound.max = 10_000;
    const start = performance.now();
    const s = await startRecovery({
      js,
      config,
      layout,
      store,
      state,
      env: { writer: { service: "recovery", instanceId: "rec-bench" }, clock: systemClock, ids: randomIds },
      hosts: () => undefined,
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log,
      snapshots: { store: createSnapshotStore(nc, layout, "recovery"), policy },
    });
    await s.ready;
    return { ms: performance.now() - start, s };
  }

  /** The api's open-runs view: start → every run event folded (queueDepths waits for the last one). */
  async function openRuns() {
    const start = performance.now();
    const p = await startOpenRunsProjection(js, await jetstreamManager(nc), layout, {
      catchUpTimeoutMs: 600_000,
      snapshots: { store: createSnapshotStore(nc, layout, "api"), policy, log, clock: systemClock },
    });
    await p.queueDepths();
    return { ms: performance.now() - start, p };
  }

  // Memory: the fold from 1 without a bound (every finished run stays), then with the default bound.
  gc();
  const baseMb = process.memoryUsage().heapUsed / 2 ** 20;
  let unbounded: { heapMb: number; runs: number } | undefined;
  if (UNBOUNDED) {
    const u = await admission(undefined);
    unbounded = { heapMb: u.heapMb - baseMb, runs: u.runs };
    await u.s.stop();
  }
  gc();
  const base2 = process.memoryUsage().heapUsed / 2 ** 20;
  const cold = await admission(10_000);
  const bounded = { heapMb: cold.heapMb - base2, runs: cold.runs };
  const t1 = performance.now();
  await cold.s.writeSnapshot();
  const snapWriteMs = performance.now() - t1;
  await cold.s.stop();
  const recCold = await recovery();
  await recCold.s.writeSnapshot();
  await recCold.s.stop();
  const apiCold = await openRuns();
  await apiCold.p.writeSnapshot();
  await apiCold.p.stop();
  await finishedRuns(N / 2, 500);
  const warm = await admission(10_000);
  await warm.s.stop();
  const recWarm = await recovery();
  await recWarm.s.stop();
  const apiWarm = await openRuns();
  await apiWarm.p.stop();

  const size = `${N.toLocaleString("en")} events (${(N / 2).toLocaleString("en")} finished runs)`;
  const metric = (value: number, unit: string, note: string): Metric => ({ unit, value: round(value), note });
  const metrics: Record<string, Metric> = {
    [`admission_restart_no_snapshot_${N}`]: metric(cold.ms, "ms", `start → caught up, fold from 1, ${size}`),
    [`admission_restart_snapshot_${N}`]: metric(
      warm.ms,
      "ms",
      `start → caught up from a snapshot + 1,000-event tail, ${size}`,
    ),
    [`recovery_restart_no_snapshot_${N}`]: metric(recCold.ms, "ms", `start → caught up, fold from 1, ${size}`),
    [`recovery_restart_snapshot_${N}`]: metric(
      recWarm.ms,
      "ms",
      `start → caught up from a snapshot + 1,000-event tail, ${size}`,
    ),
    [`api_open_runs_restart_no_snapshot_${N}`]: metric(apiCold.ms, "ms", `start → caught up, fold from 1, ${size}`),
    [`api_open_runs_restart_snapshot_${N}`]: metric(
      apiWarm.ms,
      "ms",
      `start → caught up from a snapshot + 1,000-event tail, ${size}`,
    ),
    [`admission_snapshot_write_${N}`]: metric(
      snapWriteMs,
      "ms",
      `encode + gzip + write of the bounded run index, ${size}`,
    ),
    [`admission_index_heap_bounded_${N}`]: metric(
      bounded.heapMb,
      "MiB",
      `heap held after the fold, bound 10,000 terminal runs (${bounded.runs} runs kept), ${size}`,
    ),
    ...(unbounded
      ? {
          [`admission_index_heap_unbounded_${N}`]: metric(
            unbounded.heapMb,
            "MiB",
            `heap held after the fold with no bound (${unbounded.runs} runs kept), ${size}`,
          ),
        }
      : {}),
  };
  console.log(JSON.stringify({ writeS: round(writeS), ...metrics }, null, 2));
  await recordMetrics(metrics);
} finally {
  redis.disconnect();
  await nc.close();
  await Promise.all([nats.stop(), redisServer.stop()]);
}
