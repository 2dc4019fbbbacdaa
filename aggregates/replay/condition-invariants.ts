import { evaluateCondition, type ConditionDep, type Step } from "../../contracts/index.ts";
import type { ExecEvent, ExecutionState } from "../execution.ts";
import type { ScheduleDecision } from "../scheduler.ts";
import type { Divergence } from "./result.ts";

type Check = Omit<Divergence, "scope"> | undefined;
type ControlEvent = Extract<ExecEvent, { type: "exec.condition-evaluated" | "exec.step-skipped" }>;

/** Offer keys of the control-flow decisions the scheduler made at some point of the replay. */
export const condKey = (stepId: string): string => `cond:${stepId}`;
export const skipKey = (stepId: string, reason: string): string => `skip:${stepId}:${reason}`;

/** Adds a decision's condition evaluations and skips to the offered set. */
export function offerControl(offered: Set<string>, d: ScheduleDecision): void {
  if (d.kind !== "continue") return;
  for (const id of d.evaluate ?? []) offered.add(condKey(id));
  for (const s of d.skip ?? []) offered.add(skipKey(s.stepId, s.reason));
}

export interface ControlCtx {
  readonly state: ExecutionState;
  readonly offered: ReadonlySet<string>;
  /** The run input, when the caller has the run's `submitted` (absent: conditions are not re-evaluated). */
  readonly input?: { readonly value: unknown };
  readonly storedOutputs?: ReadonlyMap<string, string>;
}

/**
 * Checks a `condition-evaluated` or `step-skipped`: the scheduler re-run over the journal chose to
 * evaluate (or skip, for that reason) the step, and a recorded condition re-evaluates, over the run
 * input and the recorded dependency outputs, to the journaled result.
 */
export function controlProblem(seq: number, event: ControlEvent, step: Step, c: ControlCtx): Check {
  const id = event.data.stepId;
  if (event.type === "exec.step-skipped") {
    if (c.offered.has(skipKey(id, event.data.reason))) return undefined;
    return {
      invariant: "scheduler-divergence",
      seq,
      message: `step-skipped ${id} (${event.data.reason}) at seq ${seq}: the scheduler re-run over the journal never skips it for that reason`,
    };
  }
  if (step.when === undefined || !c.offered.has(condKey(id)))
    return {
      invariant: "scheduler-divergence",
      seq,
      message: `condition-evaluated ${id} at seq ${seq}: ${step.when === undefined ? "the step has no when condition" : "its dependencies had not settled, or its trigger skips it"}`,
    };
  if (!c.input) return undefined;
  const deps = conditionDeps(step, c.state, c.storedOutputs);
  if (!deps) return undefined;
  const again = evaluateCondition(step.when, c.input.value, deps);
  const want = again.ok ? String(again.value) : `an error (${again.error})`;
  if (again.ok && again.value === event.data.result) return undefined;
  return {
    invariant: "condition-rederivation",
    seq,
    message: `condition of step ${id} at seq ${seq} is journaled ${event.data.result}, but re-evaluates to ${want} over the recorded input and outputs`,
  };
}

/**
 * Checks a step attempt against its condition: a step with `when` runs only after the journal
 * recorded it true; the one exception is the attempt that journals the condition's evaluation error.
 */
export function conditionGate(
  seq: number,
  event: Extract<ExecEvent, { type: "exec.step-completed" | "exec.step-failed" | "exec.timer-started" }>,
  step: Step,
  c: ControlCtx,
): Check | "accepted" {
  const id = event.data.stepId;
  if (step.when === undefined || c.state.conditions.get(id) === true) return undefined;
  const evalError =
    event.type === "exec.step-failed" && event.data.code === "condition-error" && event.data.attempt === 1;
  if (evalError && !c.state.conditions.has(id) && c.offered.has(condKey(id))) return "accepted";
  return {
    invariant: "scheduler-divergence",
    seq,
    message: `${event.type.slice(5)} ${id}#${event.data.attempt} at seq ${seq}: the journal never recorded its condition true`,
  };
}

/** The dependencies as a condition saw them, or undefined when a stored output's bytes are not at hand. */
function conditionDeps(
  step: Step,
  state: ExecutionState,
  stored?: ReadonlyMap<string, string>,
): Map<string, ConditionDep> | undefined {
  const deps = new Map<string, ConditionDep>();
  for (const d of step.dependsOn) {
    const done = state.completed.get(d);
    if (!done) {
      deps.set(d, { state: "skipped" });
      continue;
    }
    if (!done.outputRef) {
      deps.set(d, { state: "completed", output: done.output });
      continue;
    }
    const text = stored?.get(done.outputRef.name);
    if (text === undefined) return undefined;
    deps.set(d, { state: "completed", output: JSON.parse(text) as unknown });
  }
  return deps;
}
