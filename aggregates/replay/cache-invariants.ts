import type { DataOf, Step } from "../../contracts/index.ts";
import type { ExecutionState } from "../execution.ts";
import type { Divergence } from "./result.ts";

type Check = Omit<Divergence, "scope"> | undefined;

/**
 * A step cache hit (`exec.step-reused` with `cache`, docs/step-cache.md): unlike a fork's reuse it
 * comes when the step would start, so it must be a step that declares `cache`, whose next attempt
 * the scheduler re-run over the journal offered (`offered` holds `<stepId>#<attempt>`), and whose
 * cached output was at most the step's `ttlMs` old when the hit was journaled (`occurredAt`).
 * The digest of what it carries is checked like a fork's reuse, by the caller.
 */
export function cacheHitProblem(
  seq: number,
  occurredAt: string,
  data: DataOf<"exec.step-reused"> & { cache: NonNullable<DataOf<"exec.step-reused">["cache"]> },
  step: Step,
  state: ExecutionState,
  offered: ReadonlySet<string>,
): Check {
  const { stepId, cache } = data;
  if (!step.cache)
    return {
      invariant: "scheduler-divergence",
      seq,
      message: `exec.step-reused ${stepId} at seq ${seq} is a cache hit, but the step declares no cache`,
    };
  const attempt = (state.failures.get(stepId)?.attempt ?? 0) + 1;
  if (!offered.has(`${stepId}#${attempt}`))
    return {
      invariant: "scheduler-divergence",
      seq,
      message: `exec.step-reused ${stepId} at seq ${seq} is a cache hit, but the scheduler re-run over the journal never offered attempt ${attempt} of ${stepId}`,
    };
  const ageMs = Date.parse(occurredAt) - Date.parse(cache.storedAt);
  if (ageMs > step.cache.ttlMs)
    return {
      invariant: "scheduler-divergence",
      seq,
      message: `exec.step-reused ${stepId} at seq ${seq} used a cached output ${ageMs} ms old; the step's cache ttlMs is ${step.cache.ttlMs}`,
    };
  return undefined;
}
