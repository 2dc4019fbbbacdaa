/** scheduler service: fires schedules into runs, exactly once per nominal time (docs/schedules.md). */
export { startScheduler, type SchedulerDeps, type SchedulerService } from "./shell/service.ts";
export { fireKey } from "./shell/act.ts";
export { ScheduleBook } from "./shell/book.ts";
