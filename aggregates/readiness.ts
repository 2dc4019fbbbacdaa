import type { DataOf, Step, StepId } from "../contracts/index.ts";

/** A step the scheduler decides not to run, with the journal's reason. */
export interface StepSkip {
  readonly stepId: StepId;
  readonly reason: DataOf<"exec.step-skipped">["reason"];
  readonly detail: string;
}

export type Readiness =
  | { readonly kind: "wait" }
  /** Trigger `any`: a dependency completed and every unsettled one is a wait, to be superseded before the step goes. */
  | { readonly kind: "supersede"; readonly waits: readonly StepId[]; readonly on: StepId }
  | { readonly kind: "evaluate" }
  | { readonly kind: "ready" }
  | ({ readonly kind: "skip" } & StepSkip);

const WAIT: Readiness = { kind: "wait" };

/**
 * Where an unsettled step stands given its dependencies (docs/control-flow.md): it waits until every
 * dependency completed or was skipped — except that a trigger `any` step with a completed dependency
 * does not wait for dependencies that are waits (`isWait`): it asks for them to be superseded
 * (`supersede`; the first resolved wait wins); then its trigger decides (`all-completed`, the default, skips
 * it when a dependency was skipped; `any` skips it when all were; `all-done` never does); then its
 * `when`: not yet evaluated → `evaluate`, recorded false → skip, recorded true (or none) → ready.
 * Pure; the condition itself is evaluated by the caller and journaled before it counts.
 */
export function readiness(
  step: Pick<Step, "id" | "dependsOn" | "when" | "trigger">,
  completed: ReadonlySet<string>,
  skipped: ReadonlySet<string>,
  conditions: ReadonlyMap<string, boolean>,
  isWait: (stepId: string) => boolean = () => false,
): Readiness {
  // The common answer first, allocating nothing: a long chain asks this of every later step after each step.
  if (step.trigger !== "any" && step.dependsOn.some((d) => !completed.has(d) && !skipped.has(d))) return WAIT;
  const open = step.dependsOn.filter((d) => !completed.has(d) && !skipped.has(d));
  if (open.length > 0) {
    const on = step.trigger === "any" ? step.dependsOn.find((d) => completed.has(d)) : undefined;
    return on !== undefined && open.every(isWait) ? { kind: "supersede", waits: open, on } : { kind: "wait" };
  }
  const gone = step.dependsOn.filter((d) => skipped.has(d));
  const trigger = step.trigger ?? "all-completed";
  const skip = (reason: StepSkip["reason"], detail: string): Readiness => ({
    kind: "skip",
    stepId: step.id,
    reason,
    detail: detail.slice(0, 500),
  });
  if (trigger === "all-completed" && gone.length > 0)
    return skip("dependency-skipped", `dependency ${gone.join(", ")} was skipped (trigger all-completed)`);
  if (trigger === "any" && gone.length > 0 && gone.length === step.dependsOn.length)
    return skip("dependency-skipped", `every dependency (${gone.join(", ")}) was skipped (trigger any)`);
  if (step.when === undefined) return { kind: "ready" };
  const result = conditions.get(step.id);
  if (result === undefined) return { kind: "evaluate" };
  return result ? { kind: "ready" } : skip("condition-false", `condition was false: ${step.when}`);
}
