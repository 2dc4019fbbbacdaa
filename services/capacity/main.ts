import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { Gauge } from "prom-client";
import { routability } from "../../aggregates/capacity/routability.ts";
import { staleHeartbeatMsOf } from "../../contracts/index.ts";
import { bootstrap } from "../../platform/bootstrap.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { controlSubject } from "../../platform/control-subject.ts";
import { skipRecorder } from "../../streams/index.ts";
import { maxEndedRuntimesOf } from "../../platform/snapshots/from-env.ts";
import { serveCapacityRebuild } from "./shell/control.ts";
import { startCapacityProjection } from "./shell/projection.ts";

/**
 * capacity: folds runtime events and heartbeats into the Redis capacity view. A request on
 * `drover-ctl.<controlPlaneId>.capacity.rebuild` (`<tag>.drover-ctl…` on a tagged layout; sent by
 * `drover capacity-rebuild`) drops the view, rebuilds it from sequence 1 and replies with its facts.
 */
const ctx = await bootstrap("capacity", { redis: true });
const view = redisCapacityView<CapacityDescriptor>(ctx.redis!, ctx.config.controlPlaneId);
const projection = await startCapacityProjection({
  js: ctx.js,
  layout: ctx.layout,
  view,
  controlPlaneId: ctx.config.controlPlaneId,
  // Fenced and retired runtimes beyond the bound leave memory (the view keeps them; docs/snapshots.md).
  maxEnded: maxEndedRuntimesOf(process.env),
  onSkip: skipRecorder(ctx.nc, ctx.layout, "capacity", ctx.log),
  onError: (e) => {
    ctx.log.fatal({ err: String(e) }, "projection stopped; exiting so the supervisor restarts from the checkpoint");
    process.exit(1);
  },
});
await projection.ready;
ctx.log.info({ runtimes: (await view.all()).length }, "capacity view caught up");
// Read from the Redis view on each scrape (reservations left out: admission's numbers can only be lower).
const scrape = async () => {
  const now = Date.now();
  const staleMs = staleHeartbeatMsOf(ctx.config);
  return (await view.all()).map((d) => ({ d, r: routability(d, { now, staleMs, reservedSlots: 0 }) }));
};
new Gauge({
  name: "drover_runtimes",
  help: "runtimes in the capacity view by state",
  labelNames: ["state"],
  registers: [ctx.ops.registry],
  async collect() {
    const by = new Map<string, number>();
    for (const { d } of await scrape()) by.set(d.status, (by.get(d.status) ?? 0) + 1);
    this.reset();
    for (const [state, n] of by) this.set({ state }, n);
  },
});
new Gauge({
  name: "drover_available_slots",
  help: "free run slots on runtimes that accept runs, by owning tenant (shared: no owner)",
  labelNames: ["tenant"],
  registers: [ctx.ops.registry],
  async collect() {
    const by = new Map<string, number>();
    for (const { d, r } of await scrape()) {
      if (!r.canAcceptRun) continue;
      const tenant = d.registration?.tenantId ?? "shared";
      by.set(tenant, (by.get(tenant) ?? 0) + r.effectiveAvailableSlots);
    }
    this.reset();
    for (const [tenant, n] of by) this.set({ tenant }, n);
  },
});

const subject = controlSubject(ctx.layout, ctx.config.controlPlaneId, "capacity", "rebuild");
const sub = serveCapacityRebuild(ctx.nc, subject, projection, view, ctx.log);
await ctx.nc.flush(); // the server has the subscription before anyone is told it is there
ctx.log.info({ subject }, "answering capacity rebuild requests");
ctx.onShutdown(async () => {
  sub.unsubscribe();
  await projection.stop();
});
