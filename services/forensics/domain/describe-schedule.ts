import { assertNever } from "../../../contracts/assert-never.ts";
import type { DroverEvent } from "../../../contracts/index.ts";
import type { Detail, Refs } from "../../../contracts/read-models.ts";

type ScheduleEvent = Extract<DroverEvent, { type: `schedule.${string}` }>;

/** The ledger's line for a schedule event (docs/schedules.md); the DAG and input are never copied. */
export function describeSchedule(
  e: ScheduleEvent,
  scheduleId: string,
): { summary: string; detail: Detail; refs: Refs } {
  const row = (summary: string, detail: Detail = {}, refs: Refs = {}) => ({
    summary,
    detail: { scheduleId, ...detail },
    refs,
  });
  switch (e.type) {
    case "schedule.created": {
      const spec =
        "cron" in e.data.spec ? `${e.data.spec.cron} (${e.data.spec.timezone})` : `every ${e.data.spec.intervalMs} ms`;
      return row(`schedule ${scheduleId} created by ${e.data.by}: ${spec}, overlap ${e.data.overlap}`, {
        by: e.data.by,
        overlap: e.data.overlap,
        catchUpMs: e.data.catchUpMs,
      });
    }
    case "schedule.paused":
    case "schedule.resumed":
    case "schedule.deleted":
      return row(`schedule ${scheduleId} ${e.type.slice("schedule.".length)} by ${e.data.by}`, { by: e.data.by });
    case "schedule.backfill-requested":
      return row(`schedule ${scheduleId} backfill ${e.data.from} .. ${e.data.to} asked by ${e.data.by}`, {
        backfillId: e.data.backfillId,
        from: e.data.from,
        to: e.data.to,
        by: e.data.by,
      });
    case "schedule.fired":
      return row(
        `schedule ${scheduleId} fired for ${e.data.nominalAt}: run ${e.data.sharedRunId}`,
        { nominalAt: e.data.nominalAt, ...(e.data.cancelled ? { cancelled: e.data.cancelled } : {}) },
        { sharedRunId: e.data.sharedRunId },
      );
    case "schedule.skipped":
      return row(`schedule ${scheduleId} skipped ${e.data.count} fire(s) from ${e.data.nominalAt}: ${e.data.reason}`, {
        nominalAt: e.data.nominalAt,
        reason: e.data.reason,
        count: e.data.count,
      });
    default:
      return assertNever(e);
  }
}
