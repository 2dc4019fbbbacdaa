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
import { Reason, ReasonCode } from "./reason.ts";
import { StepCacheKey, StepCacheOrigin } from "./step-cache.ts";
import { ExecWaitOpened, ExecWaitResolved } from "./events-wait.ts";
import { canonicalSize, RUN_INPUT_MAX_BYTES } from "./json-size.ts";

/**
 * JSON value recorded as a step output. Read models never store it as a document (FerretDB cannot
 * store nested arrays); they keep its canonical JSON text.
 */
export const StepOutput = z.json();
/** Outputs up to this many bytes of canonical JSON are journaled inline; larger ones go to the object store. */
export const INLINE_OUTPUT_MAX_BYTES = 8 * 1024;
/** No step or run output may exceed this many bytes of canonical JSON (`step-output-too-large`). */
export const OUTPUT_MAX_BYTES = 4 * 1024 * 1024;
const sha256 = z.string().regex(/^[a-f0-9]{64}$/);
/**
 * An output kept in the JetStream Object Store instead of the journal: the object's name in the
 * outputs bucket, its size and the sha256 of its bytes (the canonical JSON), which is also the
 * output digest. A reader that gets other bytes has a divergence, never an output.
 */
export const StoredOutputRef = z
  .object({
    bucket: z.string().min(1).max(64),
    name: z.string().min(1).max(512),
    size: z.number().int().nonnegative(),
    digest: sha256,
  })
  .strict();
export type StoredOutputRef = z.infer<typeof StoredOutputRef>;

/** Execution journal events on `drover.exec.<tenant>.<executionId>.<event>`; every append is conditional (fencing). */
export const ExecStarted = defineEvent("exec", "started", () =>
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
export const ExecStepCompleted = defineEvent("exec", "step-completed", () =>
  z
    .object({
      stepId: StepId,
      attempt: z.number().int().positive(),
      output: StepOutput.optional().describe("inline output; absent when outputRef names the stored one"),
      outputRef: StoredOutputRef.optional(),
      outputDigest: z.string().regex(/^[a-f0-9]{64}$/),
      durationMs: z.number().int().nonnegative(),
      cacheKey: StepCacheKey.optional().describe("set for a step with `cache`: the key its output is cached under"),
    })
    .strict()
    .refine((d) => (d.output === undefined) !== (d.outputRef === undefined), {
      message: "exactly one of output and outputRef",
    }),
);
export const ExecStepFailed = defineEvent("exec", "step-failed", () =>
  z
    .object({
      stepId: StepId,
      attempt: z.number().int().positive(),
      error: z.string().max(2000),
      code: ReasonCode.optional().describe("catalogued cause, e.g. step-timeout, step-non-retryable"),
      retryAt: z.iso.datetime().optional().describe("absent when the step has no attempts left"),
    })
    .strict(),
);
/**
 * A `sleep` step's durable timer: appended (conditionally, like every exec append) before the step
 * waits, so a resumed execution waits only until `wakeAt`, not the whole duration again.
 */
export const ExecTimerStarted = defineEvent("exec", "timer-started", () =>
  z
    .object({
      stepId: StepId,
      attempt: z.number().int().positive(),
      durationMs: z.number().int().nonnegative(),
      wakeAt: z.iso.datetime(),
    })
    .strict(),
);
/**
 * A step's `when` condition, evaluated once every dependency it waits for had settled, before the
 * step ran or was skipped: `result` is what the runtime decided on (a resumed execution never
 * re-evaluates it; replay validation re-derives it from the run input and the recorded outputs).
 */
export const ExecConditionEvaluated = defineEvent("exec", "condition-evaluated", () =>
  z.object({ stepId: StepId, result: z.boolean() }).strict(),
);
/**
 * A step that will not run: its condition was false (`condition-false`), its trigger was not met
 * because dependencies were skipped (`dependency-skipped`), or it is a wait still open when every
 * step depending on it went on another dependency (`superseded`: trigger `any`, the first resolved
 * wait wins). Its output is `null` for dependents.
 */
export const ExecStepSkipped = defineEvent("exec", "step-skipped", () =>
  z
    .object({
      stepId: StepId,
      reason: z.enum(["condition-false", "dependency-skipped", "superseded"]),
      detail: z.string().max(500),
    })
    .strict(),
);
/**
 * A map step's expansion (docs/control-flow.md "Map"), journaled before any item runs: how many
 * items `map.over` resolved to, the sha256 of their canonical JSON, and the caps in force. Items are
 * `<stepId>--<index>`; a resumed execution runs only the items without a step-completed (or spent
 * failure), and replay validation re-derives count and digest from the input and recorded outputs.
 */
export const ExecMapExpanded = defineEvent("exec", "map-expanded", () =>
  z
    .object({
      stepId: StepId,
      count: z.number().int().nonnegative(),
      itemsDigest: z.string().regex(/^[a-f0-9]{64}$/),
      maxConcurrency: z.number().int().positive(),
      toleratedFailures: z.number().int().nonnegative().describe("the tolerated failed items, as a count"),
    })
    .strict(),
);
/**
 * A step of a fork that did not execute: its output is the original run's, reused by reference
 * (inline as journaled there, or the same object-store ref) and digest. Written by the runtime
 * (conditionally, like every exec append) after `exec.started`, before any step runs; it counts as
 * the step's completion for the scheduler, the run's output and replay. A step cache hit
 * (docs/step-cache.md) is the same event with `cache` set, written when the step would start.
 */
export const ExecStepReused = defineEvent("exec", "step-reused", () =>
  z
    .object({
      stepId: StepId,
      fromRun: SharedRunId,
      fromExecutionId: ExecutionId,
      output: StepOutput.optional().describe("inline output as the original journaled it"),
      outputRef: StoredOutputRef.optional(),
      outputDigest: z.string().regex(/^[a-f0-9]{64}$/),
      cache: StepCacheOrigin.optional().describe("set for a step cache hit (docs/step-cache.md); absent for a fork"),
    })
    .strict()
    .refine((d) => (d.output === undefined) !== (d.outputRef === undefined), {
      message: "exactly one of output and outputRef",
    }),
);
/**
 * A run step's decision to submit its child run (docs/control-flow.md "Child runs"): the runtime
 * journals it with the child's resolved `input`; admission, which may write `run.submitted`, turns
 * it into the child's submission (the child's DAG it takes from the parent run's own DAG).
 * `childRunId` is derived from (tenant, execution, step, attempt), so a resumed execution finds the
 * same child instead of asking for another one.
 */
export const ExecChildRunSubmitted = defineEvent("exec", "child-run-submitted", () =>
  z
    .object({
      stepId: StepId,
      attempt: z.number().int().positive(),
      childRunId: SharedRunId,
      input: StepOutput.optional()
        .refine((v) => v === undefined || canonicalSize(v) <= RUN_INPUT_MAX_BYTES, {
          message: `a child run's input is at most ${RUN_INPUT_MAX_BYTES} bytes of JSON`,
        })
        .describe("the child run's input: the run step's params with their $refs resolved (absent: none)"),
    })
    .strict(),
);
export const ExecPausedForRecovery = defineEvent("exec", "paused-for-recovery", () =>
  z
    .object({
      forensicsId: ForensicsId,
      incidentId: RuntimeFailureIncidentId,
      failedRuntimeInstanceId: RuntimeInstanceId,
      newEpoch: z.number().int().positive(),
    })
    .strict(),
);
export const ExecResumed = defineEvent("exec", "resumed", () =>
  z
    .object({
      runtimeInstanceId: RuntimeInstanceId,
      localRunId: LocalRunId,
      epoch: z.number().int().positive(),
      completedSteps: z.number().int().nonnegative(),
    })
    .strict(),
);
export const ExecCompleted = defineEvent("exec", "completed", () =>
  z.object({ outputDigest: z.string().regex(/^[a-f0-9]{64}$/) }).strict(),
);
export const ExecFailed = defineEvent("exec", "failed", () =>
  z.object({ reason: Reason, stepId: StepId.optional() }).strict(),
);
export const ExecCancelled = defineEvent("exec", "cancelled", () =>
  z.object({ reason: z.string().max(500).default("") }).strict(),
);

export const EXEC_EVENTS = [
  ExecStarted,
  ExecStepCompleted,
  ExecStepFailed,
  ExecTimerStarted,
  ExecConditionEvaluated,
  ExecStepSkipped,
  ExecMapExpanded,
  ExecWaitOpened,
  ExecWaitResolved,
  ExecStepReused,
  ExecChildRunSubmitted,
  ExecPausedForRecovery,
  ExecResumed,
  ExecCompleted,
  ExecFailed,
  ExecCancelled,
] as const;
