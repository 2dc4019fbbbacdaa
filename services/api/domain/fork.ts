import { z } from "zod";
import type { ExecutionState } from "../../../aggregates/execution.ts";
import { isTerminal, type RunState } from "../../../aggregates/run.ts";
import {
  DroverError,
  ExecutionId,
  SharedRunId,
  StepId,
  StepOutput,
  type DagDefinition,
  type ForkOrigin,
} from "../../../contracts/index.ts";

/**
 * The body of `POST /v1/runs/:id/fork`. `inputPatch` is a JSON merge patch (RFC 7386) applied to
 * the original's input: objects merge key by key, `null` deletes a key, anything else replaces.
 */
export const ForkRunBody = z
  .object({
    fromStep: StepId.describe("the first step to execute again; it and every step downstream of it execute"),
    inputPatch: StepOutput.optional().describe("JSON merge patch (RFC 7386) applied to the original run's input"),
    idempotencyKey: z.string().min(1).max(200).optional(),
    labels: z.record(z.string().min(1).max(63), z.string().max(256)).optional().describe("default: the original's"),
  })
  .strict();
export type ForkRunBody = z.infer<typeof ForkRunBody>;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** RFC 7386 JSON merge patch: `patch` applied to `target`. Pure; neither argument is changed. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** `fromStep` and every step that depends on it, transitively: what a fork executes for sure. */
export function downstreamOf(dag: Pick<DagDefinition, "steps">, fromStep: string): Set<string> {
  const out = new Set([fromStep]);
  for (let grew = true; grew;) {
    grew = false;
    for (const s of dag.steps) if (!out.has(s.id) && s.dependsOn.some((d) => out.has(d))) grew = out.add(s.id).size > 0;
  }
  return out;
}

/** Every step `stepId` depends on, transitively. */
export function upstreamOf(dag: Pick<DagDefinition, "steps">, stepId: string): Set<string> {
  const byId = new Map(dag.steps.map((s) => [s.id as string, s]));
  const out = new Set<string>();
  const visit = (id: string) => {
    for (const d of byId.get(id)?.dependsOn ?? []) if (!out.has(d) && out.add(d)) visit(d);
  };
  visit(stepId);
  return out;
}

/**
 * What a fork of `original` from `fromStep` reuses, in DAG order. Pure. A step is reused when it is
 * not downstream of `fromStep`, the original's journal completed it, and every step it depends on is
 * reused too (so a reused output never sits on one the fork computes anew); every other step
 * executes. Throws `fork-invalid` (400) when `fromStep` is not in the
 * DAG; `run-not-ended` (409) while the original is in flight; `fork-upstream-incomplete` (409,
 * details.steps) when a step upstream of `fromStep` did not complete in the original.
 */
export function planFork(original: RunState, journal: ExecutionState | undefined, fromStep: string): ForkOrigin {
  const dag = original.dag;
  const sharedRunId = original.sharedRunId;
  if (!dag || !sharedRunId) throw new DroverError("dag-invalid", `run ${sharedRunId ?? "?"} has no valid DAG to fork`);
  if (!dag.steps.some((s) => s.id === fromStep))
    throw new DroverError("fork-invalid", `step ${fromStep} is not in run ${sharedRunId}'s DAG`, {
      details: { fromStep, steps: dag.steps.map((s) => s.id) },
    });
  if (!isTerminal(original.status))
    throw new DroverError("run-not-ended", `run ${sharedRunId} is ${original.status}; only an ended run is forked`, {
      details: { sharedRunId, status: original.status },
    });
  const completed = journal?.completed ?? new Map();
  const missing = [...upstreamOf(dag, fromStep)].filter((id) => !completed.has(id));
  if (missing.length > 0)
    throw new DroverError(
      "fork-upstream-incomplete",
      `steps ${missing.join(", ")} upstream of ${fromStep} did not complete in run ${sharedRunId}; nothing to reuse`,
      { details: { sharedRunId, fromStep, steps: missing } },
    );
  const executes = downstreamOf(dag, fromStep);
  const reused = new Set<string>();
  // DAG order is not topological in general: repeat until no step joins.
  for (let grew = true; grew;) {
    grew = false;
    for (const s of dag.steps) {
      if (reused.has(s.id) || executes.has(s.id) || !completed.has(s.id)) continue;
      if (s.dependsOn.every((d) => reused.has(d))) grew = reused.add(s.id).size > 0;
    }
  }
  const reuse = dag.steps
    .filter((s) => reused.has(s.id))
    .map((s) => ({ stepId: s.id, outputDigest: completed.get(s.id)!.outputDigest }));
  return {
    sharedRunId: SharedRunId.parse(sharedRunId),
    ...(original.executionId === undefined ? {} : { executionId: ExecutionId.parse(original.executionId) }),
    fromStep: StepId.parse(fromStep),
    reuse,
  };
}
