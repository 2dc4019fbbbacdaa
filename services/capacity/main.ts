import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { bootstrap } from "../../platform/bootstrap.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { startCapacityProjection } from "./shell/projection.ts";

/**
 * capacity: folds runtime events and heartbeats into the Redis capacity view. A request on
 * `drover-ctl.<controlPlaneId>.capacity.rebuild` drops the view and rebuilds it from sequence 1.
 */
const ctx = await bootstrap("capacity", { redis: true });
const view = redisCapacityView<CapacityDescriptor>(ctx.redis!, ctx.config.controlPlaneId);
const projection = await startCapacityProjection({
  js: ctx.js, layout: ctx.layout, view, controlPlaneId: ctx.config.controlPlaneId,
  onError: (e) => { ctx.log.fatal({ err: String(e) }, "projection stopped; exiting so the supervisor restarts from the checkpoint"); process.exit(1); },
});
await projection.ready;
ctx.log.info({ runtimes: (await view.all()).length }, "capacity view caught up");
const sub = ctx.nc.subscribe(`drover-ctl.${ctx.config.controlPlaneId}.capacity.rebuild`, {
  callback: (_err, msg) => {
    const t0 = performance.now();
    projection.rebuild().then(
      async () => msg.respond(JSON.stringify({ ok: true, runtimes: (await view.all()).length, ms: Math.round(performance.now() - t0) })),
      (e) => msg.respond(JSON.stringify({ ok: false, error: String(e) })),
    );
  },
});
ctx.onShutdown(async () => { sub.unsubscribe(); await projection.stop(); });
