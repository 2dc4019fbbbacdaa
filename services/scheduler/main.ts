import { bootstrap } from "../../platform/bootstrap.ts";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { startScheduler } from "./shell/service.ts";

/** scheduler: folds schedules and fires them into runs (`schedule.fired` atomic with the run's `run.submitted`). */
const ctx = await bootstrap("scheduler", { commandSecret: false });
const service = await startScheduler({
  js: ctx.js,
  store: ctx.store,
  layout: ctx.layout,
  clock: systemClock,
  log: ctx.log,
  env: { writer: { service: "scheduler", instanceId: ctx.instanceId }, clock: systemClock, ids: randomIds },
  ...(process.env.DROVER_SCHEDULER_TICK_MS ? { tickMs: Number(process.env.DROVER_SCHEDULER_TICK_MS) } : {}),
});
ctx.onShutdown(() => service.stop());
