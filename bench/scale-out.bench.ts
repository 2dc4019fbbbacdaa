/**
 * Cold scale-out on process hosts, on the real control plane (every service a process, private
 * nats-server and Redis): K dedicated tenants with no capacity each submit one run, one tenant at a
 * time, so every run needs a new runtime. Per scale-out: scaleout.requested → each readiness layer
 * → runtime.capacity-published, and submitted → dispatched for the run that asked for it. Times are
 * the server's stream timestamps, so no client clock enters the figures.
 */
import { connectHarness } from "../platform/nats-auth/server-keys.ts";
import { createEventStore, type StoredEvent } from "../streams/index.ts";
import { apiClient } from "../platform/api-client.ts";
import { startControlPlane } from "../platform/control-plane-processes.ts";
import { startNats, startRedis } from "../platform/local-servers.ts";
import { eventually } from "../test/support/streams.ts";
import { latencyMetric, recordMetrics, type Metric } from "./support/results.ts";

const K = Number(process.env.BENCH_SCALEOUTS ?? 12);
const tenants = Array.from({ length: K }, (_, k) => `t-cold-${String(k).padStart(2, "0")}`);
const token = (t: string) => `bench-token-${t}-000001`;
const nats = await startNats();
const redis = await startRedis();
try {
  const cp = await startControlPlane({
    natsUrl: nats.url,
    redisUrl: redis.url,
    config: {
      controlPlaneId: "cp-bench-scale",
      heartbeatIntervalMs: 250,
      dispatchTimeoutMs: 3000,
      tenants: tenants.map((tenantId) => ({
        tenantId,
        isolationMode: "dedicated" as const,
        maxRuntimeInstances: 1,
        workersPerInstance: 2,
        maxConcurrentRunsPerInstance: 4,
        localQueueCapacity: 16,
        maxWorkersPerRun: 1,
        maxConcurrentRuns: 100,
      })),
      tokens: Object.fromEntries(tenants.map((t) => [token(t), { role: "tenant" as const, tenantId: t }])),
    },
  });
  const dag = { steps: [{ id: "only", kind: "compute" as const, params: { durationMs: 0 } }] };
  const runs = new Map<string, string>();
  for (const t of tenants) {
    const api = apiClient(cp.apiUrl, token(t));
    const id = (await api.submit(dag)).body.sharedRunId as string;
    runs.set(t, id);
    await eventually(
      `${t} run completed`,
      async () => ((await api.run(id)).body?.status === "completed" ? true : undefined),
      60_000,
    );
  }

  const nc = await connectHarness({ servers: nats.url });
  const log: StoredEvent[] = [];
  await createEventStore(nc, cp.layout).replay({ seq: 1 }, (e) => {
    log.push(e);
  });
  await nc.close();
  const first = (t: string, type: string, layer?: string) =>
    log
      .find(
        (e) =>
          e.event.tenantId === t &&
          e.event.type === type &&
          (layer === undefined || (e.event.data as { layer?: string }).layer === layer),
      )
      ?.time.getTime();
  const span = (from: (t: string) => number | undefined, to: (t: string) => number | undefined): number[] =>
    tenants.map((t) => to(t)! - from(t)!).filter(Number.isFinite);
  const requested = (t: string) => first(t, "scaleout.requested");
  const published = (t: string) => first(t, "runtime.capacity-published");
  const metric = (xs: number[], note: string): Metric => latencyMetric(xs, `${note}; ${xs.length} cold scale-outs`);
  const layers = ["resource", "host", "endpoint", "command"] as const;
  const perLayer = Object.fromEntries(
    layers.map((l) => [
      `scale_out_to_${l}`,
      metric(
        span(requested, (t) => first(t, "runtime.readiness-layer-passed", l)),
        `scaleout.requested → readiness layer ${l} passed`,
      ),
    ]),
  );
  const metrics: Record<string, Metric> = {
    scale_out_latency: metric(
      span(requested, published),
      "scaleout.requested → runtime.capacity-published, process host, cold (a new runtime process each)",
    ),
    ...perLayer,
    cold_submit_to_dispatch: metric(
      span(
        (t) => first(t, "run.submitted"),
        (t) => first(t, "run.dispatched"),
      ),
      "run.submitted → run.dispatched for a run that needed a new runtime",
    ),
  };
  if (metrics.scale_out_latency!.value <= 0 || span(requested, published).length !== K)
    throw new Error(`expected ${K} scale-outs, measured ${span(requested, published).length}`);
  await recordMetrics(metrics, { nats: "2.15.3" });
  console.log(JSON.stringify(metrics, null, 2));
  await cp.stop();
} finally {
  await nats.stop();
  await redis.stop();
}
