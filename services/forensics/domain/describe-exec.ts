import { assertNever } from "../../../contracts/assert-never.ts";
import { desc as d, reason, type Description, type Of } from "./describe-parts.ts";

/** The ledger's line for an execution journal event (pure; outputs are never copied, digests are). */
export function describeExec(e: Of<"exec">, executionId: string): Description {
  const ex = { executionId };
  switch (e.type) {
    case "exec.started":
      return d(
        `execution started on ${e.data.runtimeInstanceId} at epoch ${e.data.epoch} (${e.data.stepCount} steps)`,
        { dagDigest: e.data.dagDigest, stepCount: e.data.stepCount, epoch: e.data.epoch },
        {
          ...ex,
          sharedRunId: e.data.sharedRunId,
          localRunId: e.data.localRunId,
          runtimeInstanceId: e.data.runtimeInstanceId,
        },
      );
    case "exec.step-completed":
      return d(
        `step ${e.data.stepId} completed (attempt ${e.data.attempt})`,
        {
          stepId: e.data.stepId,
          attempt: e.data.attempt,
          outputDigest: e.data.outputDigest,
          durationMs: e.data.durationMs,
          epoch: e.writer.epoch ?? null,
        },
        ex,
      );
    case "exec.step-failed":
      return d(
        `step ${e.data.stepId} failed (attempt ${e.data.attempt})${e.data.retryAt ? "" : ", no attempts left"}`,
        { stepId: e.data.stepId, attempt: e.data.attempt, error: e.data.error, retryAt: e.data.retryAt ?? null },
        ex,
      );
    case "exec.timer-started":
      return d(
        `step ${e.data.stepId} sleeps until ${e.data.wakeAt} (attempt ${e.data.attempt})`,
        {
          stepId: e.data.stepId,
          attempt: e.data.attempt,
          durationMs: e.data.durationMs,
          wakeAt: e.data.wakeAt,
          epoch: e.writer.epoch ?? null,
        },
        ex,
      );
    case "exec.condition-evaluated":
      return d(
        `step ${e.data.stepId} condition evaluated ${e.data.result}`,
        { stepId: e.data.stepId, result: e.data.result },
        ex,
      );
    case "exec.step-skipped":
      return d(
        `step ${e.data.stepId} skipped (${e.data.reason})`,
        { stepId: e.data.stepId, reason: e.data.reason, detail: e.data.detail },
        ex,
      );
    case "exec.wait-opened":
      return d(
        `wait step ${e.data.stepId} opened for signal ${e.data.name} until ${e.data.timeoutAt}`,
        { stepId: e.data.stepId, name: e.data.name, timeoutAt: e.data.timeoutAt },
        ex,
      );
    case "exec.wait-resolved":
      return d(
        e.data.by === "signal"
          ? `wait step ${e.data.stepId} resolved by ${e.data.principal}`
          : `wait step ${e.data.stepId} timed out`,
        { ...e.data },
        ex,
      );
    case "exec.map-expanded":
      return d(
        `map step ${e.data.stepId} expanded into ${e.data.count} items (items ${e.data.stepId}--0…; at most ${e.data.maxConcurrency} at once, ${e.data.toleratedFailures} failures tolerated)`,
        {
          stepId: e.data.stepId,
          count: e.data.count,
          itemsDigest: e.data.itemsDigest,
          maxConcurrency: e.data.maxConcurrency,
          toleratedFailures: e.data.toleratedFailures,
        },
        ex,
      );
    case "exec.child-run-submitted":
      return d(
        `run step ${e.data.stepId} submitted child run ${e.data.childRunId} (attempt ${e.data.attempt})`,
        { stepId: e.data.stepId, attempt: e.data.attempt, childRunId: e.data.childRunId },
        ex,
      );
    case "exec.step-reused":
      return d(
        e.data.cache
          ? `step ${e.data.stepId} reused from run ${e.data.fromRun} step ${e.data.cache.fromStepId} (step cache hit, not executed)`
          : `step ${e.data.stepId} reused from run ${e.data.fromRun} (not executed)`,
        {
          stepId: e.data.stepId,
          fromRun: e.data.fromRun,
          fromExecutionId: e.data.fromExecutionId,
          outputDigest: e.data.outputDigest,
        },
        ex,
      );
    case "exec.paused-for-recovery":
      return d(
        `paused for recovery: new epoch ${e.data.newEpoch}, ${e.data.failedRuntimeInstanceId} fenced out`,
        { newEpoch: e.data.newEpoch },
        {
          ...ex,
          forensicsId: e.data.forensicsId,
          incidentId: e.data.incidentId,
          runtimeInstanceId: e.data.failedRuntimeInstanceId,
        },
      );
    case "exec.resumed":
      return d(
        `resumed on ${e.data.runtimeInstanceId} at epoch ${e.data.epoch} with ${e.data.completedSteps} steps done`,
        { epoch: e.data.epoch, completedSteps: e.data.completedSteps },
        { ...ex, runtimeInstanceId: e.data.runtimeInstanceId, localRunId: e.data.localRunId },
      );
    case "exec.completed":
      return d("execution completed", { outputDigest: e.data.outputDigest }, ex);
    case "exec.failed":
      return d(
        `execution failed: ${e.data.reason.code}`,
        { ...reason(e.data.reason), stepId: e.data.stepId ?? null },
        ex,
      );
    case "exec.cancelled":
      return d("execution cancelled", { reasonDetail: e.data.reason }, ex);
    default:
      return assertNever(e, "exec event");
  }
}
