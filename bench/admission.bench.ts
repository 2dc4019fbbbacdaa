/**
 * Admission and end-to-end latency on the real control plane (every service a process, process
 * hosts, private nats-server and Redis): on warm capacity (cold scale-out is scale-out.bench.ts) N one-step runs submitted through the HTTP API: submission → dispatched (p50/p99),
 * admitted+dispatched runs per second, submission → completed (p50/p99). Times are the server's
 * stream timestamps, so no client clock enters the figures.
 */
import { connectHarness } from "../platform/nats-auth/server-keys.ts";
import { createEventStore, eventTypeFilter, type StoredEvent } from "../streams/index.ts";
import { apiClient } from "../platform/api-client.ts";
import { startControlPlane } from "../platform/control-plane-processes.ts";
import { startNats, startRedis } from "../platform/local-servers.ts";
import { eventually } from "../test/support/streams.ts";
import { cpuSnapshot, cpuSpent } from "./support/cpu.ts";
import { latencyMetric, recordMetrics, round } from "./support/results.ts";

const N = Number(process.env.BENCH_RUNS ?? 300);
const TOKEN = "bench-token-tenant-000001";
const nats = await startNats();
const redis = await startRedis();
try {
  const cp = await startControlPlane({
    natsUrl: nats.url,
    redisUrl: redis.url,
    config: {
      controlPlaneId: "cp-bench",
      heartbeatIntervalMs: 250,
      dispatchTimeoutMs: 3000,
      tenants: [
        {
          tenantId: "t-bench",
          isolationMode: "dedicated",
          maxRuntimeInstances: 1,
          workersPerInstance: 8,
          maxConcurrentRunsPerInstance: 64,
          localQueueCapacity: 1000,
          maxWorkersPerRun: 1,
          maxConcurrentRuns: 10_000,
          // admission is measured, not the API's submission pace (docs/security.md): never paced here
          submissionPace: { queuedRunsAbove: 1_000_000 },
        },
      ],
      tokens: { [TOKEN]: { role: "tenant", tenantId: "t-bench" } },
    },
  });
  const api = apiClient(cp.apiUrl, TOKEN);
  const dag = { steps: [{ id: "only", kind: "compute" as const, params: { durationMs: 0 } }] };
  const warm = (await api.submit(dag)).body.sharedRunId as string;
  await eventually(
    "warm-up run",
    async () => ((await api.run(warm)).body?.status === "completed" ? true : undefined),
    60_000,
  );

  // Unloaded: one submission at a time, each waited for until completed.
  const single: string[] = [];
  for (let k = 0; k < 30; k++) {
    const id = (await api.submit(dag)).body.sharedRunId as string;
    single.push(id);
    await eventually(
      "single run",
      async () => ((await api.run(id)).body?.status === "completed" ? true : undefined),
      30_000,
    );
  }

  // Completion is watched on the stream (a core subscription to run.completed), not by polling the
  // API: polling 20 runs every 25 ms took CPU from the very services whose throughput this measures.
  const nc = await connectHarness({ servers: nats.url });
  const completed = new Set<string>();
  const sub = nc.subscribe(eventTypeFilter(cp.layout, "run.completed"));
  const ids: string[] = [];
  let done = (): void => {};
  const allDone = new Promise<void>((r) => (done = r));
  const check = () => ids.length === N && ids.every((id) => completed.has(id)) && done();
  void (async () => {
    for await (const m of sub) {
      completed.add((m.json() as { correlationId: string }).correlationId);
      check();
    }
    done();
  })();
  let next = 0;
  const cpuBefore = await cpuSnapshot();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < N) {
        next++;
        ids.push((await api.submit(dag)).body.sharedRunId);
      }
    }),
  );
  const timeout = setTimeout(() => sub.unsubscribe(), 300_000);
  check();
  await allDone;
  sub.unsubscribe();
  clearTimeout(timeout);
  if (!ids.every((id) => completed.has(id))) throw new Error(`${N - completed.size} runs not completed within 300 s`);
  const cpu = cpuSpent(cpuBefore, await cpuSnapshot());

  const log: StoredEvent[] = [];
  await createEventStore(nc, cp.layout).replay({ seq: 1 }, (e) => {
    log.push(e);
  });
  await nc.close();
  const byType: Record<string, number> = {};
  for (const e of log) byType[e.event.type] = (byType[e.event.type] ?? 0) + 1;
  console.log(`events in the log by type: ${JSON.stringify(byType)}`);
  const at = (type: string, id: string) =>
    log.find((e) => e.event.type === type && e.event.correlationId === id)?.time.getTime();
  const dispatch1 = single.map((id) => at("run.dispatched", id)! - at("run.submitted", id)!);
  const e2e1 = single.map((id) => at("run.completed", id)! - at("run.submitted", id)!);
  const dispatch = ids.map((id) => at("run.dispatched", id)! - at("run.submitted", id)!).filter(Number.isFinite);
  const e2e = ids.map((id) => at("run.completed", id)! - at("run.submitted", id)!).filter(Number.isFinite);
  const firstSubmit = Math.min(...ids.map((id) => at("run.submitted", id)!));
  const lastDispatch = Math.max(...ids.map((id) => at("run.dispatched", id)!));
  const metrics = {
    admission_throughput: {
      unit: "runs/s",
      value: round((ids.length / (lastDispatch - firstSubmit)) * 1000),
      note: `${ids.length} one-step runs, 16 concurrent API clients, warm capacity (1 runtime, 8 workers)`,
    },
    dispatch_latency: latencyMetric(
      dispatch1,
      "run.submitted → run.dispatched, one submission at a time, warm capacity, server timestamps",
    ),
    e2e_latency_1step: latencyMetric(e2e1, "run.submitted → run.completed, one at a time, warm capacity"),
    dispatch_latency_burst: latencyMetric(
      dispatch,
      `run.submitted → run.dispatched during a burst of ${ids.length} (includes queueing)`,
    ),
    e2e_latency_1step_burst: latencyMetric(e2e, "run.submitted → run.completed during the burst"),
    cpu_per_run_burst: {
      unit: "ms",
      value: round(Object.values(cpu).reduce((a, b) => a + b, 0) / ids.length),
      note: `CPU (user+system) of every process per run during the burst: ${Object.entries(cpu)
        .map(([k, v]) => `${k} ${round(v / ids.length)}`)
        .join(", ")}`,
    },
  };
  await recordMetrics(metrics, { nats: "2.15.3" });
  console.log(JSON.stringify(metrics, null, 2));
  await cp.stop();
} finally {
  await nats.stop();
  await redis.stop();
}
