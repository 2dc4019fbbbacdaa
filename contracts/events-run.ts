import { z } from "zod";
import { DagDefinition } from "./dag.ts";
import { defineEvent } from "./define-event.ts";
import {
  ExecutionId,
  ForensicsId,
  HostIncarnation,
  LocalRunId,
  RuntimeFailureIncidentId,
  RuntimeInstanceId,
  ScaleOutRequestId,
  ScheduleId,
  SharedRunId,
  StepId,
} from "./ids.ts";
import { Reason } from "./reason.ts";
import { StepOutput, StoredOutputRef } from "./events-exec.ts";
import { canonicalSize, RUN_INPUT_MAX_BYTES } from "./json-size.ts";
import { ParentLink } from "./child-run.ts";
import { RunSignalReceived } from "./events-wait.ts";

export { RUN_INPUT_MAX_BYTES };
import { Transport, WorkerVersion } from "./tenant-settings.ts";
import { RunPriority } from "./flow-control.ts";

/**
 * Where a fork (`POST /v1/runs/:id/fork`) comes from: the original run, the execution whose journal
 * holds the reused outputs, the step the fork executes from, and each reused step with the digest of
 * the output it reuses. The outputs are read from that journal by the runtime (by reference, never
 * copied into this event) and checked against these digests.
 */
export const ForkOrigin = z
  .object({
    sharedRunId: SharedRunId,
    executionId: ExecutionId.optional().describe("absent when the original never started (nothing to reuse)"),
    fromStep: StepId,
    reuse: z.array(z.object({ stepId: StepId, outputDigest: z.string().regex(/^[a-f0-9]{64}$/) }).strict()).max(1000),
  })
  .strict();
export type ForkOrigin = z.infer<typeof ForkOrigin>;

/** Run lifecycle events on `drover.run.<tenant>.<sharedRunId>.<event>`. */
export const RunSubmitted = defineEvent("run", "submitted", () =>
  z
    .object({
      sharedRunId: SharedRunId,
      dag: DagDefinition,
      idempotencyKey: z.string().min(1).max(200).optional(),
      source: z
        .enum(["api", "producer", "schedule", "run-step"])
        .describe(
          "the HTTP API, a trusted producer publishing to JetStream, a schedule's fire, or a parent's run step",
        ),
      schedule: z
        .object({ scheduleId: ScheduleId, nominalAt: z.iso.datetime() })
        .strict()
        .optional()
        .describe("the schedule and nominal time whose fire started this run"),
      labels: z.record(z.string().max(63), z.string().max(256)).default({}),
      priority: RunPriority.optional().describe(
        "higher is admitted first within the tenant (docs/flow-control.md); capped by the tenant's maxRunPriority",
      ),
      rerunOf: SharedRunId.optional().describe(
        "the run this one reruns (POST /v1/runs/:id/rerun): same DAG and labels",
      ),
      forkedFrom: ForkOrigin.optional().describe(
        "the run this one forks (POST /v1/runs/:id/fork): its steps not downstream of fromStep are reused",
      ),
      parent: ParentLink.optional().describe(
        "the parent run, execution and run step that submitted this child run (docs/control-flow.md)",
      ),
      input: StepOutput.optional()
        .refine((v) => v === undefined || canonicalSize(v) <= RUN_INPUT_MAX_BYTES, {
          message: `the run input is at most ${RUN_INPUT_MAX_BYTES} bytes of JSON`,
        })
        .describe("the run's input; steps reference it as {$ref: input[.path]}"),
    })
    .strict(),
);

export const RunAdmitted = defineEvent("run", "admitted", () =>
  z
    .object({
      runtimeInstanceId: RuntimeInstanceId,
      localRunId: LocalRunId,
      reservationId: z.string().min(1).max(200),
      candidates: z
        .array(z.object({ runtimeInstanceId: RuntimeInstanceId, rank: z.number().int(), why: z.string().max(300) }))
        .max(64)
        .default([]),
      recovery: z.boolean().default(false).describe("true when this placement is a recovery item"),
      workerVersion: WorkerVersion.optional().describe(
        "the worker version of the runtime placed on; the first one a run gets is the version it is pinned to",
      ),
    })
    .strict(),
);

export const RunQueuedGlobally = defineEvent("run", "queued-globally", () => z.object({ reason: Reason }).strict());
export const RunScaleOutRequested = defineEvent("run", "scale-out-requested", () =>
  z.object({ requestId: ScaleOutRequestId }).strict(),
);
export const RunDispatchFailed = defineEvent("run", "dispatch-failed", () =>
  z
    .object({
      runtimeInstanceId: RuntimeInstanceId,
      localRunId: LocalRunId,
      reason: Reason,
    })
    .strict(),
);
export const RunDispatched = defineEvent("run", "dispatched", () =>
  z
    .object({
      runtimeInstanceId: RuntimeInstanceId,
      localRunId: LocalRunId,
      transport: Transport,
      hostIncarnation: HostIncarnation,
      resumeExecutionId: ExecutionId.optional().describe(
        "set when the dispatch is a ResumeExecution of an in-flight execution",
      ),
    })
    .strict(),
);
export const RunStarted = defineEvent("run", "started", () =>
  z
    .object({
      executionId: ExecutionId,
      localRunId: LocalRunId,
      runtimeInstanceId: RuntimeInstanceId,
    })
    .strict(),
);
export const RunRequeuedForResume = defineEvent("run", "requeued-for-resume", () =>
  z
    .object({
      forensicsId: ForensicsId,
      incidentId: RuntimeFailureIncidentId,
      executionId: ExecutionId,
      failedRuntimeInstanceId: RuntimeInstanceId,
      failedLocalRunId: LocalRunId,
      newEpoch: z.number().int().positive(),
    })
    .strict(),
);
export const RunRequeuedForLocalQueuedRecovery = defineEvent("run", "requeued-for-local-queued-recovery", () =>
  z
    .object({
      forensicsId: ForensicsId,
      incidentId: RuntimeFailureIncidentId,
      failedRuntimeInstanceId: RuntimeInstanceId,
      failedLocalRunId: LocalRunId,
    })
    .strict(),
);
export const RunReplacementSelected = defineEvent("run", "replacement-selected", () =>
  z
    .object({
      forensicsId: ForensicsId,
      runtimeInstanceId: RuntimeInstanceId,
    })
    .strict(),
);
export const RunCompleted = defineEvent("run", "completed", () =>
  z
    .object({
      executionId: ExecutionId,
      localRunId: LocalRunId,
      outputDigest: z.string().max(128),
      output: StepOutput.optional().describe("the sink step's output (several sinks: keyed by step id)"),
      outputRef: StoredOutputRef.optional().describe("set instead of output when it is above the inline limit"),
    })
    .strict(),
);
export const RunFailed = defineEvent("run", "failed", () =>
  z
    .object({
      executionId: ExecutionId.optional(),
      localRunId: LocalRunId.optional(),
      reason: Reason,
    })
    .strict(),
);
/**
 * A caller asked to cancel the run (API `POST /v1/runs/:id/cancel`). It moves no lifecycle state by
 * itself: admission cancels a run that holds no runtime, and sends CancelRun to the runtime of a
 * started one, whose `cancelled` follows (runtime.md). `by` is the credential, never a body field.
 */
export const RunCancelRequested = defineEvent("run", "cancel-requested", () =>
  z
    .object({
      by: z.string().min(1).max(200).describe("tenant:<tenantId> or operator:<name>, from the bearer token"),
      reason: z.string().max(500).default(""),
    })
    .strict(),
);
export const RunCancelled = defineEvent("run", "cancelled", () =>
  z
    .object({
      reason: z.string().max(500).default(""),
      by: z.string().max(200).optional().describe("who asked, copied from the cancel-requested event"),
    })
    .strict(),
);
/**
 * A fork of this run was submitted (API `POST /v1/runs/:id/fork`): the original's side of the link.
 * It moves no lifecycle state; the runtime steps over it like a cancel request. `by` is the credential.
 */
export const RunForked = defineEvent("run", "forked", () =>
  z
    .object({
      forkRunId: SharedRunId,
      fromStep: StepId,
      by: z.string().min(1).max(200).describe("tenant:<tenantId> or operator:<name>, from the bearer token"),
    })
    .strict(),
);
/**
 * A caller moved the pinned run to a newer worker version (API `POST /v1/runs/:id/upgrade`,
 * docs/worker-versions.md): `toVersion` offered every kind in `kinds`, the kinds of the steps the run
 * had not completed. Placement, resumes and recovery place it on `toVersion` from then on; the
 * runtime running it keeps it until its next placement. `by` is the credential, never a body field.
 */
export const RunUpgraded = defineEvent("run", "upgraded", () =>
  z
    .object({
      fromVersion: WorkerVersion,
      toVersion: WorkerVersion,
      kinds: z.array(z.string().min(1).max(200)).max(500).describe("the remaining steps' kinds toVersion offers"),
      by: z.string().min(1).max(200).describe("tenant:<tenantId> or operator:<name>, from the bearer token"),
    })
    .strict(),
);
export const RunRejected = defineEvent("run", "rejected", () => z.object({ reason: Reason }).strict());

export const RUN_EVENTS = [
  RunSubmitted,
  RunAdmitted,
  RunQueuedGlobally,
  RunScaleOutRequested,
  RunDispatchFailed,
  RunDispatched,
  RunStarted,
  RunRequeuedForResume,
  RunRequeuedForLocalQueuedRecovery,
  RunReplacementSelected,
  RunCompleted,
  RunFailed,
  RunCancelRequested,
  RunCancelled,
  RunRejected,
  RunForked,
  RunSignalReceived,
  RunUpgraded,
] as const;
