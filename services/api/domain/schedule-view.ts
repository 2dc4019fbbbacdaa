import { z } from "zod";
import { planSchedule } from "../../../aggregates/schedule-plan.ts";
import type { ScheduleState } from "../../../aggregates/schedule.ts";
import { OverlapPolicy, ScheduleId, ScheduleSpec, StepOutput, type DroverEvent } from "../../../contracts/index.ts";

/** `POST /v1/schedules` (docs/schedules.md). */
export const CreateScheduleBody = z
  .object({
    scheduleId: ScheduleId.optional().describe("defaults to a fresh id"),
    spec: ScheduleSpec,
    // Checked by the shell (checkDag: dag-invalid with every issue), as a run's is; a record here
    // keeps the DAG schema's {$ref} objects out of the OpenAPI document.
    dag: z.record(z.string(), z.unknown()),
    input: StepOutput.optional(),
    labels: z.record(z.string().max(63), z.string().max(256)).default({}),
    overlap: OverlapPolicy.default("skip"),
    catchUpMs: z
      .number()
      .int()
      .nonnegative()
      .max(7 * 24 * 3_600_000)
      .default(60_000),
    jitterMs: z.number().int().nonnegative().max(3_600_000).default(0),
  })
  .strict();
export type CreateScheduleBody = z.infer<typeof CreateScheduleBody>;

export const BackfillBody = z.object({ from: z.iso.datetime(), to: z.iso.datetime() }).strict();

/** What a fire or skip did, for the schedule's recent history. */
export interface ScheduleFire {
  readonly nominalAt: string;
  readonly at: string;
  readonly outcome: "fired" | "skipped";
  readonly sharedRunId?: string;
  readonly reason?: string;
  readonly count?: number;
  readonly backfillId?: string;
}

/** A type, not an interface: it is served as a JSON object (assignable to a record). */
export type ScheduleView = {
  readonly scheduleId: string;
  readonly tenantId: string;
  readonly status: "active" | "paused" | "deleted";
  readonly spec: ScheduleSpec;
  readonly overlap: OverlapPolicy;
  readonly catchUpMs: number;
  readonly jitterMs: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly createdBy: string;
  readonly createdAt: string;
  readonly lastSeq: number;
  /** When the next regular fire is due (null: paused, deleted or never again). */
  readonly nextFireAt: string | null;
  readonly fired: number;
  readonly skipped: number;
  /** The last 20 fires and skips, newest first. */
  readonly recent: readonly ScheduleFire[];
};

/** The view of a folded schedule at `nowMs` (undefined: no such schedule); `history` gives the recent fires. */
export function scheduleView(
  s: ScheduleState,
  tenantId: string,
  history: readonly { readonly time: Date; readonly event: DroverEvent }[],
  nowMs: number,
): ScheduleView | undefined {
  const def = s.def;
  if (def === undefined || s.status === "none") return undefined;
  const step = s.status === "active" ? planSchedule(s, nowMs, []) : undefined;
  const next =
    step?.kind === "wait"
      ? step.untilMs
      : step?.kind === "fire" && step.backfillId === undefined
        ? step.nominalAt
        : null;
  const fires: ScheduleFire[] = [];
  let fired = 0,
    skipped = 0;
  for (const { time, event: e } of history) {
    if (e.type === "schedule.fired") {
      fired++;
      fires.push({
        nominalAt: e.data.nominalAt,
        at: time.toISOString(),
        outcome: "fired",
        sharedRunId: e.data.sharedRunId,
        ...(e.data.backfillId ? { backfillId: e.data.backfillId } : {}),
      });
    } else if (e.type === "schedule.skipped") {
      skipped += e.data.count;
      fires.push({
        nominalAt: e.data.nominalAt,
        at: time.toISOString(),
        outcome: "skipped",
        reason: e.data.reason,
        count: e.data.count,
      });
    }
  }
  return {
    scheduleId: def.scheduleId,
    tenantId,
    status: s.status,
    spec: def.spec,
    overlap: def.overlap,
    catchUpMs: def.catchUpMs,
    jitterMs: def.jitterMs,
    labels: def.labels,
    createdBy: def.by,
    createdAt: new Date(s.createdAt).toISOString(),
    lastSeq: s.lastSeq,
    nextFireAt: next === null ? null : new Date(next).toISOString(),
    fired,
    skipped,
    recent: fires.slice(-20).reverse(),
  };
}
