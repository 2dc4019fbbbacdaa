import type { FastifyInstance } from "fastify";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { ApiDeps } from "../shell/deps.ts";

/**
 * `GET /healthz` (the process answers), `GET /readyz` (JetStream answers with the event stream;
 * the read models are reported, and their absence is `degraded`, never not-ready: the event-sourced
 * routes still work) and `GET /metrics` (Prometheus text, prom-client). No credentials: nothing
 * here names a tenant's data beyond counts.
 */
export function opsRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "drover_api_" });
  const requests = new Counter({
    name: "drover_api_requests_total",
    help: "HTTP answers by route and status",
    labelNames: ["method", "route", "status"],
    registers: [registry],
  });
  const latency = new Histogram({
    name: "drover_api_request_seconds",
    help: "HTTP answer latency by route",
    labelNames: ["method", "route"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  new Gauge({
    name: "drover_read_model_lag_events",
    help: "event stream last sequence minus the sequence the read models applied (-1: read models unavailable)",
    registers: [registry],
    async collect() {
      try {
        const [head, at] = await Promise.all([deps.feed.head(), deps.readModels?.position() ?? Promise.resolve(-1)]);
        this.set(at < 0 ? -1 : Math.max(0, head - at));
      } catch {
        this.set(-1);
      }
    },
  });
  new Gauge({
    name: "drover_event_stream_last_sequence",
    help: "the event stream's last sequence",
    registers: [registry],
    async collect() {
      this.set(await deps.feed.head().catch(() => -1));
    },
  });

  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? "unmatched";
    requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    latency.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });

  app.get("/healthz", { schema: { hide: true } }, async () => ({ status: "ok" }));
  app.get("/readyz", { schema: { hide: true } }, async (_request, reply) => {
    const checks: Record<string, string> = {};
    try {
      checks.eventStream = `ok (last sequence ${await deps.feed.head()})`;
    } catch (e) {
      checks.eventStream = `unavailable: ${(e as Error).message}`;
    }
    if (!deps.readModels) checks.readModels = "degraded: MONGO_URL not set";
    else
      checks.readModels = await deps.readModels.position().then(
        (seq) => `ok (applied up to ${seq})`,
        (e: Error) => `degraded: ${e.message}`,
      );
    const ready = checks.eventStream.startsWith("ok");
    return reply.code(ready ? 200 : 503).send({ status: ready ? "ready" : "not-ready", checks });
  });
  app.get("/metrics", { schema: { hide: true } }, async (_request, reply) =>
    reply.header("content-type", registry.contentType).send(await registry.metrics()),
  );
}
