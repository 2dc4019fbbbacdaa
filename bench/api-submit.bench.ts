/**
 * The API's CPU per submission (issue 14's flood, issue 15's W2): only the `api` process runs, on a
 * private nats-server and Redis, and BENCH_RUNS one-step runs (the flood test's DAG) are submitted
 * through HTTP by 16 clients; the API process's CPU (user + system) over the burst is divided by the
 * runs. Nothing admits the runs (no other service runs), so the figure is the API's alone and does
 * not depend on the machine's load the way a latency does. Then 1 000 of the runs are read once each
 * (`GET /v1/runs/:id`, as a client polling for a run's end does). `DROVER_CPU_PROF_DIR` profiles it.
 */
import { apiClient } from "../platform/api-client.ts";
import { startControlPlane } from "../platform/control-plane-processes.ts";
import { startNats, startRedis } from "../platform/local-servers.ts";
import { cpuSnapshot, cpuSpent } from "./support/cpu.ts";
import { recordMetrics, round } from "./support/results.ts";

const N = Number(process.env.BENCH_RUNS ?? 3000);
const WARM = 300;
const TOKEN = "bench-token-tenant-000001";
const nats = await startNats();
const redis = await startRedis();
try {
  const cp = await startControlPlane({
    natsUrl: nats.url,
    redisUrl: redis.url,
    services: ["api"],
    config: {
      controlPlaneId: "cp-bench",
      tenants: [
        {
          tenantId: "t-bench",
          maxConcurrentRuns: 100_000,
          maxQueuedRuns: 100_000,
          submissionPace: { queuedRunsAbove: 1_000_000 },
        },
      ],
      tokens: { [TOKEN]: { role: "tenant", tenantId: "t-bench" } },
      api: { rateLimit: { max: 1_000_000, timeWindowMs: 60_000 } },
    },
  });
  const api = apiClient(cp.apiUrl, TOKEN);
  const dag = { steps: [{ id: "only", kind: "compute" as const, params: { durationMs: 20 } }] };
  const ids: string[] = [];
  const burst = async (n: number): Promise<void> => {
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < n) {
          next++;
          const r = await api.submit(dag);
          if (r.status !== 201) throw new Error(`submission answered ${r.status}: ${JSON.stringify(r.body)}`);
          ids.push(r.body.sharedRunId as string);
        }
      }),
    );
  };
  await burst(WARM); // JIT and connections warm
  const before = await cpuSnapshot();
  const t0 = performance.now();
  await burst(N);
  const wallMs = performance.now() - t0;
  const cpu = cpuSpent(before, await cpuSnapshot());
  // Reads of a run as a client polling for its end does (the flood test's done(): GET /v1/runs/:id).
  const reads = ids.slice(-Math.min(ids.length, 1000));
  const readBefore = await cpuSnapshot();
  let at = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (at < reads.length) {
        const r = await api.run(reads[at++]!);
        if (r.status !== 200) throw new Error(`GET /v1/runs/:id answered ${r.status}`);
      }
    }),
  );
  const readCpu = cpuSpent(readBefore, await cpuSnapshot());
  const metrics = {
    api_cpu_per_submission: {
      unit: "ms",
      value: round((cpu.api ?? 0) / N, 3),
      note: `CPU (user+system) of the api process per POST /v1/runs, ${N} one-step runs by 16 clients, api alone (nats-server ${round((cpu["nats-server"] ?? 0) / N, 3)} ms)`,
    },
    api_cpu_per_run_read: {
      unit: "ms",
      value: round((readCpu.api ?? 0) / reads.length, 3),
      note: `CPU of the api process per GET /v1/runs/:id of a submitted one-step run, ${reads.length} reads by 16 clients`,
    },
  };
  console.log(JSON.stringify({ ...metrics, wallMs: Math.round(wallMs), cpu }, null, 2));
  await recordMetrics(metrics, { nats: "2.15.3" });
  await cp.stop();
} finally {
  await nats.stop();
  await redis.stop();
}
