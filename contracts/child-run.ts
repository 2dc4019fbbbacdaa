import { z } from "zod";
import { ExecutionId, SharedRunId, StepId } from "./ids.ts";
import { collectRefs } from "./step-refs.ts";

/**
 * Child runs (docs/control-flow.md "Child runs"): a step of kind `run` submits a run of its own DAG
 * for the parent's tenant, with the step's resolved `params` as the child's input, and completes
 * with the child's output. `dag` is validated at submission like a top-level DAG; run steps nest at
 * most {@link MAX_RUN_NESTING} levels below a submitted DAG.
 */
export const MAX_RUN_NESTING = 3;
/** Largest child DAG, in bytes of JSON (the parent's DAG carries it). */
export const CHILD_DAG_MAX_BYTES = 64 * 1024;

export const OnParentCancel = z
  .enum(["cancel", "abandon"])
  .describe("what cancelling the parent run does to this child: cancel it (default) or leave it running");
export type OnParentCancel = z.infer<typeof OnParentCancel>;

/** The parent side of a child run, carried by the child's `run.submitted`. */
export const ParentLink = z
  .object({
    sharedRunId: SharedRunId,
    executionId: ExecutionId,
    stepId: StepId,
    attempt: z.number().int().positive(),
    onParentCancel: OnParentCancel,
  })
  .strict();
export type ParentLink = z.infer<typeof ParentLink>;

/**
 * The idempotency key of the child a run step's attempt submits: derived from the parent execution,
 * the step and (for a retry) the attempt, so a resumed execution names the same child run and the
 * submission lands at most once (platform/submission-ids.ts turns it into the run id).
 */
export const childRunKey = (executionId: string, stepId: string, attempt: number): string =>
  attempt === 1 ? `child:${executionId}:${stepId}` : `child:${executionId}:${stepId}:${attempt}`;

interface RunStepShape {
  readonly id: string;
  readonly kind: string;
  readonly params?: unknown;
  readonly map?: unknown;
  readonly dag?: unknown;
}

const stepsOf = (dag: unknown): unknown[] => {
  const steps = (dag as { steps?: unknown } | null)?.steps;
  return Array.isArray(steps) ? steps : [];
};

/** How deep run steps nest in `steps`: 0 without run steps, else 1 + the deepest child DAG's. */
export function runNesting(steps: readonly unknown[]): number {
  let deepest = 0;
  for (const s of steps) {
    const step = s as RunStepShape | null;
    if (step?.kind !== "run") continue;
    deepest = Math.max(deepest, 1 + runNesting(stepsOf(step.dag)));
    if (deepest > MAX_RUN_NESTING) return deepest;
  }
  return deepest;
}

/** A DAG validator (the top-level DAG schema, passed in so this module does not import dag.ts). */
export type DagCheck = (dag: unknown) =>
  | { readonly success: true }
  | {
      readonly success: false;
      readonly error: { readonly issues: readonly { path: PropertyKey[]; message: string }[] };
    };

/**
 * Problems with run steps, each naming the step: the nesting bound, a child DAG that is not a valid
 * DAG (checked by `check`, the top-level DAG schema), one larger than {@link CHILD_DAG_MAX_BYTES},
 * a `$secret` in its params (they become the child's input, which is recorded), and `map`.
 */
export function childRunIssues(steps: readonly RunStepShape[], check: DagCheck): string[] {
  const issues: string[] = [];
  const depth = runNesting(steps);
  if (depth > MAX_RUN_NESTING)
    return [`run steps nest ${depth} levels deep here, more than the ${MAX_RUN_NESTING} allowed`];
  for (const s of steps) {
    if (s.kind !== "run") continue;
    if (s.map !== undefined) issues.push(`run step "${s.id}" cannot be a map step`);
    if (collectRefs(s.params).secrets.length > 0)
      issues.push(`run step "${s.id}" has a $secret in its params: they become the child run's recorded input`);
    const size = new TextEncoder().encode(JSON.stringify(s.dag ?? {})).length;
    if (size > CHILD_DAG_MAX_BYTES) {
      issues.push(`run step "${s.id}" has a child DAG of ${size} bytes, more than ${CHILD_DAG_MAX_BYTES}`);
      continue;
    }
    const r = check(s.dag);
    if (!r.success)
      for (const i of r.error.issues.slice(0, 5))
        issues.push(`run step "${s.id}" child DAG: ${["dag", ...i.path.map(String)].join(".")}: ${i.message}`);
  }
  return issues;
}
