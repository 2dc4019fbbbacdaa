import { childRunKey, type Step } from "../../contracts/index.ts";
import type { ExecEvent } from "../execution.ts";
import type { Divergence } from "./result.ts";

type Check = Omit<Divergence, "scope"> | undefined;

interface ChildCtx {
  readonly byId: ReadonlyMap<string, Step>;
  readonly offered: ReadonlySet<string>;
  readonly executionId: string;
  readonly input: { readonly digest?: (s: string) => string };
}

/**
 * A run step's journaled child submission (docs/control-flow.md "Child runs"): the step is a `run`
 * step of the DAG, the attempt is one the scheduler, re-run over the journal, chose, and (given a
 * digest) the child run id is the one derived from (tenant, execution, step, attempt), as
 * platform/submission-ids.ts derives it: a journal naming any other child diverges.
 */
export function childRunProblem(
  seq: number,
  event: Extract<ExecEvent, { type: "exec.child-run-submitted" }>,
  c: ChildCtx,
): Check {
  const { stepId, attempt, childRunId } = event.data;
  const step = c.byId.get(stepId);
  if (step?.kind !== "run")
    return {
      invariant: step ? "scheduler-divergence" : "unknown-step",
      seq,
      message: `exec.child-run-submitted at seq ${seq}: step ${stepId} is ${step ? `a ${step.kind} step, not a run step` : "not in the run's DAG"}`,
    };
  if (!c.offered.has(`${stepId}#${attempt}`))
    return {
      invariant: "scheduler-divergence",
      seq,
      message: `exec.child-run-submitted at seq ${seq}: the scheduler never chose attempt ${attempt} of ${stepId}`,
    };
  if (!c.input.digest) return undefined;
  const t = event.tenantId;
  const want = `run-${c.input.digest(`${t.length}:${t}:${childRunKey(c.executionId, stepId, attempt)}`).slice(0, 59)}`;
  if (want === childRunId) return undefined;
  return {
    invariant: "child-run-derivation",
    seq,
    message: `exec.child-run-submitted at seq ${seq}: child run ${childRunId} of step ${stepId} attempt ${attempt} is not the derived ${want}`,
  };
}
