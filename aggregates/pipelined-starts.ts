import type { DagDefinition, Step } from "../contracts/index.ts";
import { scheduleSteps, type StepProgress, type StepStart } from "./scheduler.ts";

/**
 * True for a step that may run while the completions it depends on are still being appended: its
 * attempt has no effect outside its own execution's journal (`compute` and `flaky` are pure functions
 * of their recorded inputs; no step cache, whose lookup journals a reuse and reads an index shared
 * across runs). Anything it produces is recorded only through the same journal, after those
 * completions (the journal appends in order, each at the sequence of the one before), so nothing it
 * computed is stored or seen unless they are durable; if one is refused, the execution stops and
 * the attempt is dropped. `http`, `llm`, `custom` (calls out), `run` (submits a child run), `wait`
 * and `sleep` start only once their dependencies' completions are durable.
 */
export const startsBeforeDepsDurable = (step: Pick<Step, "kind" | "cache">): boolean =>
  (step.kind === "compute" || step.kind === "flaky") && step.cache === undefined;

/**
 * The steps to start now that the durable progress does not start yet: those the scheduler starts
 * once `appending` (steps whose outcome is known and whose `step-completed` append is in flight) are
 * counted completed, and that may start before then (`startsBeforeDepsDurable`). Nothing else of
 * that decision is taken (skips, conditions, map expansions, the execution's end): those wait for
 * the durable progress. An appending step holds no worker any more (its attempt is over). Pure.
 */
export function pipelinedStarts(
  dag: Pick<DagDefinition, "steps">,
  progress: StepProgress,
  appending: ReadonlySet<string>,
  now: number,
  maxParallel: number,
  stepOf: (stepId: string) => Pick<Step, "kind" | "cache">,
): readonly StepStart[] {
  if (appending.size === 0) return [];
  const completed = new Set(progress.completed);
  for (const id of appending) completed.add(id);
  const running = new Set<string>();
  for (const id of progress.running) if (!appending.has(id)) running.add(id);
  const d = scheduleSteps(dag, { ...progress, completed, running }, now, maxParallel);
  return d.kind === "continue" ? d.start.filter((s) => startsBeforeDepsDurable(stepOf(s.stepId))) : [];
}
