import { foldExecution, type SequencedEvent } from "../../../aggregates/execution.ts";
import { isTerminal, type RunState } from "../../../aggregates/run.ts";
import { childRunKey, DagDefinition, ExecutionId, type DataOf, type OnParentCancel } from "../../../contracts/index.ts";
import { submissionIds } from "../../../platform/submission-ids.ts";

/** A run step's decision as journaled: `exec.child-run-submitted` at stream sequence `seq`. */
export interface ChildDecision {
  readonly tenantId: string;
  readonly executionId: string;
  readonly seq: number;
  readonly data: DataOf<"exec.child-run-submitted">;
}

/** What admission appends for a decision, or why it appends nothing. */
export type ChildSubmission =
  | {
      readonly kind: "submit";
      readonly eventId: string;
      readonly parentRunId: string;
      readonly onParentCancel: OnParentCancel;
      readonly data: DataOf<"run.submitted">;
    }
  | { readonly kind: "skip"; readonly why: string };

/** The ids of a run step attempt's child: derived from (tenant, execution, step, attempt), never minted. */
export const childIds = (tenantId: string, executionId: string, stepId: string, attempt: number) =>
  submissionIds(tenantId, childRunKey(executionId, stepId, attempt), () => {
    throw new Error("a child run's ids are derived, never minted");
  });

/**
 * Turns a runtime's journaled decision into the child's `run.submitted`, trusting of the decision
 * only what the runtime must choose (the resolved input): the journal, folded up to the decision,
 * must count it (the placed runtime wrote it, the first for that attempt); the execution must still
 * wait for that attempt; the child run id must be the derived one; the parent run must be running
 * this execution; and the child's DAG and `onParentCancel` come from the parent run's own DAG
 * (its run step), never from the runtime. Pure: the journal and the parent are read by the caller.
 */
export function childSubmission(
  d: ChildDecision,
  journal: readonly SequencedEvent[],
  parent: RunState,
): ChildSubmission {
  const { stepId, attempt, childRunId, input } = d.data;
  const upTo = foldExecution(journal.filter((e) => e.seq <= d.seq));
  if (upTo.children.get(stepId)?.seq !== d.seq)
    return { kind: "skip", why: "the journal does not count this decision (another runtime's, or a repeated one)" };
  const now = foldExecution(journal);
  if (now.terminal) return { kind: "skip", why: `the execution ended ${now.terminal}` };
  if (now.completed.has(stepId) || (now.failures.get(stepId)?.attempt ?? 0) >= attempt)
    return { kind: "skip", why: `attempt ${attempt} of step ${stepId} has ended` };
  const parentRunId = upTo.started?.sharedRunId;
  if (!parentRunId || parent.sharedRunId !== parentRunId || parent.executionId !== d.executionId)
    return { kind: "skip", why: "the parent run is not running this execution" };
  if (isTerminal(parent.status)) return { kind: "skip", why: `the parent run ended ${parent.status}` };
  const step = parent.dag?.steps.find((s) => s.id === stepId);
  if (step?.kind !== "run") return { kind: "skip", why: `step ${stepId} is not a run step of the parent's DAG` };
  const ids = childIds(d.tenantId, d.executionId, stepId, attempt);
  if (ids.sharedRunId !== childRunId) return { kind: "skip", why: `child run ${childRunId} is not the derived id` };
  const dag = DagDefinition.safeParse(step.dag);
  if (!dag.success) return { kind: "skip", why: `the child DAG of step ${stepId} is not a valid DAG` };
  return {
    kind: "submit",
    eventId: ids.eventId,
    parentRunId,
    onParentCancel: step.onParentCancel,
    data: {
      sharedRunId: childRunId,
      dag: dag.data,
      idempotencyKey: childRunKey(d.executionId, stepId, attempt),
      source: "run-step",
      labels: { "drover.parent": parentRunId },
      parent: {
        sharedRunId: parentRunId,
        executionId: ExecutionId.parse(d.executionId),
        stepId,
        attempt,
        onParentCancel: step.onParentCancel,
      },
      ...(input === undefined ? {} : { input }),
    },
  };
}
