import { hash } from "node:crypto";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { bootstrap } from "../../platform/bootstrap.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { redisReservations } from "../../platform/reservations.ts";
import { redisTenantClaims } from "../../platform/tenant-claims.ts";
import { closeRuntimeClients, sendCommand } from "../../platform/runtime-client.ts";
import { Counter, Gauge, Histogram } from "prom-client";
import { isPlaceable } from "./domain/run-decider.ts";
import { registerRunsGauge } from "./shell/metrics.ts";
import { RunIndex } from "./shell/run-index.ts";
import { startAdmission } from "./shell/service.ts";
import { traceClaimBatch, tracing } from "./shell/trace.ts";
import { maxTerminalRunsOf, snapshotsFromEnv } from "../../platform/snapshots/from-env.ts";

/** admission: places runs on tenant-visible capacity, queues them, asks for scale-out, dispatches. */
const ctx = await bootstrap("admission", { redis: true });
const cp = ctx.config.controlPlaneId;
const index = new RunIndex(
  ctx.layout.eventPrefix,
  (subject, seq, error) => ctx.log.warn({ subject, seq, error }, "invalid event in the stream"),
  systemClock,
);
// Terminal runs beyond the bound leave memory (docs/snapshots.md: it changes no decision).
index.maxTerminalRuns = maxTerminalRunsOf(process.env);
// The queue liveness guard (queue-stalled): each re-plan of a queue that waited past queueStallMs.
const stalls = new Counter({
  name: "drover_queue_stalled_total",
  help: "re-plans of a tenant's queue stalled past queueStallMs with no visible capacity and no open scale-out",
  labelNames: ["tenant"],
  registers: [ctx.ops.registry],
});
const service = await startAdmission({
  js: ctx.js,
  config: ctx.config,
  layout: ctx.layout,
  store: ctx.store,
  index,
  view: redisCapacityView<CapacityDescriptor>(ctx.redis!, cp),
  reservations: redisReservations(ctx.redis!, cp),
  // A claim stays pending until its run's runtime answered (dispatch.ts): longer than a dispatch may take.
  claims: redisTenantClaims(ctx.redis!, cp, {
    pendingTtlMs: Math.max(15_000, 3 * ctx.config.dispatchTimeoutMs),
    ...(tracing ? { onClaimBatch: traceClaimBatch } : {}),
  }),
  env: { writer: { service: "admission", instanceId: ctx.instanceId }, clock: systemClock, ids: randomIds },
  send: sendCommand,
  commandTokenFor: ctx.commandTokenFor,
  sha256: (s) => hash("sha256", s, "hex"),
  log: ctx.log,
  onQueueStalled: (tenant) => stalls.inc({ tenant }),
  snapshots: snapshotsFromEnv(ctx.nc, ctx.layout, "admission", ctx.ops.registry, process.env),
});
await service.ready;
ctx.log.info({ runs: index.runs.size }, "admission caught up and placing");

new Gauge({
  name: "drover_queue_depth",
  help: "runs waiting for placement in the global queue, per tenant",
  labelNames: ["tenant"],
  registers: [ctx.ops.registry],
  collect() {
    const depth = new Map<string, number>();
    for (const r of index.runs.values())
      if (!r.abandoned && isPlaceable(r.state)) depth.set(r.tenantId, (depth.get(r.tenantId) ?? 0) + 1);
    this.reset();
    for (const [tenant, n] of depth) this.set({ tenant }, n);
  },
});
registerRunsGauge(ctx.ops.registry, index);
// Observed from here on (not during the replay above): a restart does not count old dispatches again.
const toDispatch = new Histogram({
  name: "drover_submission_to_dispatch_seconds",
  help: "time from a run's submission to its dispatch, per tenant",
  labelNames: ["tenant"],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [ctx.ops.registry],
});
index.onDispatched = (run, ms) => toDispatch.observe({ tenant: run.tenantId }, ms / 1000);
ctx.onShutdown(async () => {
  await service.stop();
  closeRuntimeClients();
});
