import {
  evaluateCondition,
  type ConditionDep,
  type ErrorCode,
  type Step,
  type StepId,
} from "../../../contracts/index.ts";
import type { ScheduleDecision } from "../../../aggregates/scheduler.ts";
import type { OpenedExecution } from "./execution-open.ts";

/** What an execution lends the control-flow writer: its journal, its input and its (mutable) progress. */
export interface ControlFlowHost {
  readonly opened: OpenedExecution;
  readonly input: unknown;
  readonly skipped: Set<string>;
  readonly conditions: Map<string, boolean>;
  readonly failures: Map<string, { attempt: number; retryAt?: number }>;
  readonly lastErrors: Map<string, { code?: ErrorCode; message: string }>;
  readonly stepOf: (stepId: string) => Step;
  /** A completed step's output value (null for a skipped one). */
  readonly valueOf: (stepId: string) => Promise<unknown>;
  /**
   * Stops a running wait about to be superseded and waits until it has stopped; true when it is
   * still unsettled (false: it resolved, or failed for good, first — then nothing is skipped).
   */
  readonly release: (stepId: string) => Promise<boolean>;
}

/**
 * Makes a scheduler decision's skips and condition evaluations durable (docs/control-flow.md), in
 * the decision's order, each before it counts: `step-skipped` for each skip, `condition-evaluated`
 * for each condition that evaluated, or a non-retryable `step-failed` (`condition-error`) for one
 * that could not. Returns whether it wrote anything (the caller then decides again).
 */
export async function settleControlFlow(d: ScheduleDecision, host: ControlFlowHost): Promise<boolean> {
  if (d.kind !== "continue") return false;
  const { opened } = host;
  for (const s of d.skip ?? []) {
    // A wait's resolution racing its supersession wins: the scheduler then decides again over it.
    if (s.reason === "superseded" && !(await host.release(s.stepId))) return true;
    await opened.exec.append(opened.emit("exec.step-skipped", { ...s }));
    host.skipped.add(s.stepId);
  }
  for (const stepId of d.evaluate ?? []) {
    const step = host.stepOf(stepId);
    const result = evaluateCondition(step.when ?? "true", host.input ?? null, await depsOf(step, host));
    if (result.ok) {
      await opened.exec.append(opened.emit("exec.condition-evaluated", { stepId, result: result.value }));
      host.conditions.set(stepId, result.value);
    } else await conditionFailed(stepId, result.error, host);
  }
  return (d.skip?.length ?? 0) + (d.evaluate?.length ?? 0) > 0;
}

async function conditionFailed(stepId: StepId, error: string, host: ControlFlowHost): Promise<void> {
  const message = `condition failed to evaluate: ${error}`.slice(0, 2000);
  await host.opened.exec.append(
    host.opened.emit("exec.step-failed", { stepId, attempt: 1, error: message, code: "condition-error" }),
  );
  host.failures.set(stepId, { attempt: 1 });
  host.lastErrors.set(stepId, { code: "condition-error", message });
}

async function depsOf(step: Step, host: ControlFlowHost): Promise<Map<string, ConditionDep>> {
  const deps = new Map<string, ConditionDep>();
  for (const d of step.dependsOn)
    deps.set(d, host.skipped.has(d) ? { state: "skipped" } : { state: "completed", output: await host.valueOf(d) });
  return deps;
}
