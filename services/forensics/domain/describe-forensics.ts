import { isPlannedStopId } from "../../../contracts/index.ts";
import type { Detail, Refs } from "../../../contracts/read-models.ts";
import { assertNever } from "../../../contracts/assert-never.ts";
import { desc, type Description, type Of } from "./describe-parts.ts";

/** Describes a forensics event (one step of a recovered item's timeline) for the ledger and forensics rows. Pure. */
export function describeForensics(e: Of<"forensics">): Description {
  const x = e.data;
  const refs: Refs = {
    forensicsId: x.forensicsId,
    incidentId: x.incidentId,
    sharedRunId: x.sharedRunId,
    localRunId: x.failedLocalRunId,
    ...(x.executionId ? { executionId: x.executionId } : {}),
  };
  const item = {
    class: x.class,
    failedRuntimeInstanceId: x.failedRuntimeInstanceId,
    failedLocalRunId: x.failedLocalRunId,
  };
  // Work moved after a planned stop (host-stopped) rather than a failure: said in every summary.
  const d = (summary: string, detail: Detail = {}, r: Refs = {}): Description =>
    desc(isPlannedStopId(x.incidentId) ? `after a planned stop: ${summary}` : summary, detail, r);
  switch (e.type) {
    case "forensics.execution-recovery-candidate-detected":
      return d(
        `recovery candidate detected (${x.class})`,
        { ...item, completedSteps: e.data.completedSteps ?? null },
        refs,
      );
    case "forensics.shared-run-requeued-for-resume":
      return d(`run requeued for resume at epoch ${e.data.newEpoch}`, { ...item, newEpoch: e.data.newEpoch }, refs);
    case "forensics.shared-run-requeued-for-local-queued-recovery":
      return d("run requeued for redispatch", item, refs);
    case "forensics.failed-local-run-marked-requeued-for-recovery":
      return d(`local run ${x.failedLocalRunId} marked requeued`, item, refs);
    case "forensics.replacement-runtime-selected":
      return d(
        `replacement ${e.data.replacementRuntimeInstanceId} selected`,
        { ...item, replacementRuntimeInstanceId: e.data.replacementRuntimeInstanceId },
        refs,
      );
    case "forensics.replacement-local-run-registered":
      return d(
        `replacement local run ${e.data.replacementLocalRunId} on ${e.data.replacementRuntimeInstanceId}`,
        {
          ...item,
          replacementRuntimeInstanceId: e.data.replacementRuntimeInstanceId,
          replacementLocalRunId: e.data.replacementLocalRunId,
        },
        refs,
      );
    case "forensics.resume-context-seeded":
      return d(
        `resume context seeded: ${e.data.completedSteps} steps done`,
        { ...item, completedSteps: e.data.completedSteps, firstIncompleteStepId: e.data.firstIncompleteStepId ?? null },
        refs,
      );
    case "forensics.dag-resume-started":
      return d(
        `DAG resume started on ${e.data.replacementRuntimeInstanceId} at epoch ${e.data.epoch}`,
        { ...item, replacementRuntimeInstanceId: e.data.replacementRuntimeInstanceId, epoch: e.data.epoch },
        refs,
      );
    case "forensics.dag-resume-completed":
      return d("DAG resume completed", { ...item, outputDigest: e.data.outputDigest }, refs);
    case "forensics.execution-recovery-completed":
      return d(`recovery completed: ${e.data.outcome}`, { ...item, outcome: e.data.outcome }, refs);
    default:
      return assertNever(e, "forensics event");
  }
}
