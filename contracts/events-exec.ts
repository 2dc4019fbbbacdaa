import { z } from "zod";
import { defineEvent } from "./define-event.ts";
import { ForensicsId, LocalRunId, RuntimeFailureIncidentId, RuntimeInstanceId, SharedRunId, StepId } from "./ids.ts";
import { Reason } from "./reason.ts";

/** JSON value recorded as a step output (no nested arrays: FerretDB cannot store them). */
export const StepOutput = z.json();

/** Execution journal events on `drover.exec.<tenant>.<executionId>.<event>`; every append is conditional (fencing). */
export const ExecStarted = defineEvent(
  "exec",
  "started",
  z
    .object({
      sharedRunId: SharedRunId,
      localRunId: LocalRunId,
      runtimeInstanceId: RuntimeInstanceId,
      dagDigest: z.string().regex(/^[a-f0-9]{64}$/),
      stepCount: z.number().int().positive(),
      epoch: z.number().int().nonnegative(),
    })
    .strict(),
);
export const ExecStepCompleted = defineEvent(
  "exec",
  "step-completed",
  z
    .object({
      stepId: StepId,
      attempt: z.number().int().positive(),
      output: StepOutput,
      outputDigest: z.string().regex(/^[a-f0-9]{64}$/),
      durationMs: z.number().int().nonnegative(),
    })
    .strict(),
);
export const ExecStepFailed = defineEvent(
  "exec",
  "step-failed",
  z
    .object({
      stepId: StepId,
      attempt: z.number().int().positive(),
      error: z.string().max(2000),
      retryAt: z.iso.datetime().optional().describe("absent when the step has no attempts left"),
    })
    .strict(),
);
/**
 * A `sleep` step's durable timer: appended (conditionally, like every exec append) before the step
 * waits, so a resumed execution waits only until `wakeAt`, not the whole duration again.
 */
export const ExecTimerStarted = defineEvent(
  "exec",
  "timer-started",
  z
    .object({
      stepId: StepId,
      attempt: z.number().int().positive(),
      durationMs: z.number().int().nonnegative(),
      wakeAt: z.iso.datetime(),
    })
    .strict(),
);
export const ExecPausedForRecovery = defineEvent(
  "exec",
  "paused-for-recovery",
  z
    .object({
      forensicsId: ForensicsId,
      incidentId: RuntimeFailureIncidentId,
      failedRuntimeInstanceId: RuntimeInstanceId,
      newEpoch: z.number().int().positive(),
    })
    .strict(),
);
export const ExecResumed = defineEvent(
  "exec",
  "resumed",
  z
    .object({
      runtimeInstanceId: RuntimeInstanceId,
      localRunId: LocalRunId,
      epoch: z.number().int().positive(),
      completedSteps: z.number().int().nonnegative(),
    })
    .strict(),
);
export const ExecCompleted = defineEvent(
  "exec",
  "completed",
  z.object({ outputDigest: z.string().regex(/^[a-f0-9]{64}$/) }).strict(),
);
export const ExecFailed = defineEvent(
  "exec",
  "failed",
  z.object({ reason: Reason, stepId: StepId.optional() }).strict(),
);
export const ExecCancelled = defineEvent(
  "exec",
  "cancelled",
  z.object({ reason: z.string().max(500).default("") }).strict(),
);

export const EXEC_EVENTS = [
  ExecStarted,
  ExecStepCompleted,
  ExecStepFailed,
  ExecTimerStarted,
  ExecPausedForRecovery,
  ExecResumed,
  ExecCompleted,
  ExecFailed,
  ExecCancelled,
] as const;
