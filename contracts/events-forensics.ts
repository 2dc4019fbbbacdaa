import { z } from "zod";
import { defineEvent } from "./define-event.ts";
import {
  ExecutionId,
  ForensicsId,
  LocalRunId,
  RuntimeFailureIncidentId,
  RuntimeInstanceId,
  SharedRunId,
  StepId,
} from "./ids.ts";
import { RecoveryClass } from "./events-runtime.ts";

/** Facts every forensics event repeats, so one record is readable on its own. */
const item = {
  forensicsId: ForensicsId,
  incidentId: RuntimeFailureIncidentId,
  class: RecoveryClass,
  sharedRunId: SharedRunId,
  failedRuntimeInstanceId: RuntimeInstanceId,
  failedLocalRunId: LocalRunId,
  executionId: ExecutionId.optional(),
};
const forensic = <N extends string, E extends z.ZodRawShape>(name: N, extra: E) =>
  defineEvent("forensics", name, () => z.object({ ...item, ...extra }).strict());

/** The timeline of one recovered work item on `drover.forensics.<tenant>.<forensicsId>.<event>` (names as in the reference). */
export const FxCandidateDetected = forensic("execution-recovery-candidate-detected", {
  completedSteps: z.number().int().nonnegative().optional(),
});
export const FxRequeuedForResume = forensic("shared-run-requeued-for-resume", {
  newEpoch: z.number().int().positive(),
});
export const FxRequeuedForLocalQueued = forensic("shared-run-requeued-for-local-queued-recovery", {});
export const FxFailedLocalRunMarked = forensic("failed-local-run-marked-requeued-for-recovery", {});
export const FxReplacementSelected = forensic("replacement-runtime-selected", {
  replacementRuntimeInstanceId: RuntimeInstanceId,
});
export const FxReplacementLocalRun = forensic("replacement-local-run-registered", {
  replacementRuntimeInstanceId: RuntimeInstanceId,
  replacementLocalRunId: LocalRunId,
});
export const FxResumeContextSeeded = forensic("resume-context-seeded", {
  completedSteps: z.number().int().nonnegative(),
  firstIncompleteStepId: StepId.optional(),
});
export const FxDagResumeStarted = forensic("dag-resume-started", {
  replacementRuntimeInstanceId: RuntimeInstanceId,
  epoch: z.number().int().positive(),
});
export const FxDagResumeCompleted = forensic("dag-resume-completed", { outputDigest: z.string().max(128) });
export const FxRecoveryCompleted = forensic("execution-recovery-completed", {
  outcome: z.enum(["completed", "failed", "cancelled"]),
});

export const FORENSICS_EVENTS = [
  FxCandidateDetected,
  FxRequeuedForResume,
  FxRequeuedForLocalQueued,
  FxFailedLocalRunMarked,
  FxReplacementSelected,
  FxReplacementLocalRun,
  FxResumeContextSeeded,
  FxDagResumeStarted,
  FxDagResumeCompleted,
  FxRecoveryCompleted,
] as const;
