import { z } from "zod";
import { StepId } from "./ids.ts";

/**
 * A step's opt-in to the step cache across runs (docs/step-cache.md): a completed output of the
 * same tenant, worker version, step kind and resolved input, journaled at most `ttlMs` ago, is
 * reused instead of executing the step again.
 */
export const STEP_CACHE_LIMITS = {
  /** The longest TTL a step may ask for; the cache stream keeps entries this long. */
  maxTtlMs: 30 * 86_400_000,
} as const;

export const StepCacheSpec = z
  .object({
    ttlMs: z
      .number()
      .int()
      .min(1)
      .max(STEP_CACHE_LIMITS.maxTtlMs)
      .describe("a cached output older than this (from its step-completed) is not used"),
  })
  .strict();
export type StepCacheSpec = z.infer<typeof StepCacheSpec>;

/** The kinds whose input is their resolved params (the key's input digest): the others take no cache. */
export const CACHEABLE_KINDS = ["http", "llm", "custom"] as const;

/** Problems with steps' `cache`, each naming the step: a kind that takes none, or a map step. */
export function cacheIssues(steps: readonly { id: string; kind: string; cache?: unknown; map?: unknown }[]): string[] {
  return steps.flatMap((s) => {
    if (s.cache === undefined) return [];
    if (!(CACHEABLE_KINDS as readonly string[]).includes(s.kind))
      return [`step "${s.id}": cache applies to ${CACHEABLE_KINDS.join(", ")} steps, not ${s.kind}`];
    if (s.map !== undefined) return [`step "${s.id}": a map step takes no cache`];
    return [];
  });
}

const sha256 = z.string().regex(/^[a-f0-9]{64}$/);
/** The cache key: sha256 of (tenant, worker version, step kind, resolved-input digest); see aggregates/step-cache.ts. */
export const StepCacheKey = sha256;

/**
 * Where a cache hit's output came from, on its `exec.step-reused`: the key it was found under, the
 * step that executed it (in `fromRun`/`fromExecutionId`) and when that step-completed was journaled.
 */
export const StepCacheOrigin = z.object({ key: StepCacheKey, fromStepId: StepId, storedAt: z.iso.datetime() }).strict();
export type StepCacheOrigin = z.infer<typeof StepCacheOrigin>;
