import { z } from "zod";
import { DagDefinition } from "./dag.ts";
import { defineEvent } from "./define-event.ts";
import { StepOutput } from "./events-exec.ts";
import { ScheduleId, SharedRunId } from "./ids.ts";

/** How a schedule's fires are spaced: a cron expression in a time zone, or a fixed interval from its creation. */
export const ScheduleSpec = z.union([
  z
    .object({
      cron: z.string().min(1).max(200).describe("5 or 6 field cron expression (croner syntax)"),
      timezone: z.string().min(1).max(64).default("UTC").describe("IANA time zone the expression is read in"),
    })
    .strict(),
  z
    .object({
      intervalMs: z
        .number()
        .int()
        .min(1000)
        .max(366 * 24 * 3_600_000)
        .describe("fire every N ms"),
    })
    .strict(),
]);
export type ScheduleSpec = z.infer<typeof ScheduleSpec>;

/**
 * What a fire does while the schedule's previous run has not ended: `skip` the fire, keep at most
 * one (`buffer-one`, started when the running one ends), start it anyway (`allow-all`), or cancel
 * the running one and start (`cancel-previous`).
 */
export const OverlapPolicy = z.enum(["skip", "buffer-one", "allow-all", "cancel-previous"]);
export type OverlapPolicy = z.infer<typeof OverlapPolicy>;

/** The principal that asked (from its verified credential): a token name or an operator. */
const Principal = z.string().min(1).max(128);

/** Schedule events on `drover.schedule.<tenant>.<scheduleId>.<event>` (docs/schedules.md). */
export const ScheduleCreated = defineEvent("schedule", "created", () =>
  z
    .object({
      scheduleId: ScheduleId,
      spec: ScheduleSpec,
      dag: DagDefinition,
      input: StepOutput.optional(),
      labels: z.record(z.string().max(63), z.string().max(256)).default({}),
      overlap: OverlapPolicy,
      catchUpMs: z
        .number()
        .int()
        .nonnegative()
        .max(7 * 24 * 3_600_000)
        .describe("fires missed by at most this are still started"),
      jitterMs: z
        .number()
        .int()
        .nonnegative()
        .max(3_600_000)
        .describe("each fire is delayed by a deterministic 0..jitterMs"),
      by: Principal,
    })
    .strict(),
);
export const SchedulePaused = defineEvent("schedule", "paused", () => z.object({ by: Principal }).strict());
export const ScheduleResumed = defineEvent("schedule", "resumed", () => z.object({ by: Principal }).strict());
export const ScheduleDeleted = defineEvent("schedule", "deleted", () => z.object({ by: Principal }).strict());
export const ScheduleBackfillRequested = defineEvent("schedule", "backfill-requested", () =>
  z
    .object({
      backfillId: ScheduleId.describe("names this backfill; its runs' idempotency keys carry it"),
      from: z.iso.datetime(),
      to: z.iso.datetime(),
      by: Principal,
    })
    .strict(),
);
/** A fire that started a run; appended atomically with that run's `run.submitted`. */
export const ScheduleFired = defineEvent("schedule", "fired", () =>
  z
    .object({
      nominalAt: z.iso.datetime().describe("the time the schedule named"),
      sharedRunId: SharedRunId,
      backfillId: ScheduleId.optional(),
      cancelled: SharedRunId.optional().describe("cancel-previous: the run whose cancellation this fire asked"),
    })
    .strict(),
);
export const ScheduleSkipped = defineEvent("schedule", "skipped", () =>
  z
    .object({
      nominalAt: z.iso.datetime().describe("the (first) fire skipped"),
      reason: z
        .enum(["overlap", "missed", "already-started"])
        .describe("a run was still going, the catch-up window had passed, or a run for this nominal time exists"),
      backfillId: ScheduleId.optional(),
      lastNominalAt: z.iso.datetime().optional().describe("missed: the last fire of the range skipped"),
      count: z.number().int().positive().default(1).describe("how many fires this skips (missed ranges are one event)"),
    })
    .strict(),
);

export const SCHEDULE_EVENTS = [
  ScheduleCreated,
  SchedulePaused,
  ScheduleResumed,
  ScheduleDeleted,
  ScheduleBackfillRequested,
  ScheduleFired,
  ScheduleSkipped,
] as const;
