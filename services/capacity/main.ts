import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { bootstrap } from "../../platform/bootstrap.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { controlSubject } from "../../platform/control-subject.ts";
import { skipRecorder } from "../../streams/index.ts";
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
  onSkip: skipRecorder(ctx.nc, ctx.layout, "capacity", ctx.log),
  onError: (e) => {
    ctx.log.fatal({ err: String(e) }, "projection stopped; exiting so the supervisor restarts from the checkpoint");
    process.exit(1);
  },
});
await projection.ready;
ctx.log.info({ runtimes: (await view.all()).length }, "capacity view caught up");
const subject = controlSubject(ctx.layout, ctx.config.controlPlaneId, "capacity", "rebuild");
const sub = serveCapacityRebuild(ctx.nc, subject, projection, view, ctx.log);
await ctx.nc.flush(); // the server has the subscription before anyone is told it is there
ctx.log.info({ subject }, "answering capacity rebuild requests");
ctx.onShutdown(async () => {
  sub.unsubscribe();
  await projection.stop();
});
