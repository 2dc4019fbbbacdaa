import { requiredKindOf, resolveRefs, type RefScope, type Step } from "../contracts/index.ts";
import { canonicalJson } from "./step-inputs.ts";

/**
 * The step cache's keys (docs/step-cache.md), pure: the shell hashes the strings built here
 * (sha256; domain code does no crypto). A key covers the tenant, the version of the code that runs
 * the step (the tenant worker's for a custom step, `builtin` for drover's own kinds), the step kind
 * (`custom:<handler>`, `http`, `llm`) and the digest of the step's resolved input.
 */
export interface StepCacheKeyParts {
  readonly tenantId: string;
  readonly workerVersion: string;
  readonly kind: string;
  readonly inputDigest: string;
}

/** The version a key names for drover's own kinds (http, llm): their code ships with the runtime. */
export const BUILTIN_WORKER_VERSION = "builtin";

/** The worker version of `step`: the tenant worker's for a custom step, `builtin` otherwise (undefined: no worker). */
export const workerVersionOf = (step: Step, tenantWorkerVersion: string | undefined): string | undefined =>
  step.kind === "custom" ? tenantWorkerVersion : BUILTIN_WORKER_VERSION;

/** The text whose sha256 is the cache key; NUL-separated so no field can run into the next. */
export const cacheKeySeed = (p: StepCacheKeyParts): string =>
  ["drover-step-cache-v1", p.tenantId, p.workerVersion, p.kind, p.inputDigest].join("\u0000");

export const cacheKindOf = (step: Step): string => requiredKindOf(step);

/**
 * The canonical JSON of a step's resolved input: its params with every `$ref` replaced by what it
 * names and every `$secret` kept as its name (a secret's value never enters a key; a rotated
 * secret does not change it). Throws like `resolveRefs` when a reference resolves to nothing.
 */
export function resolvedInputText(step: Step, scope: RefScope): string {
  return canonicalJson(resolveRefs(step.params, scope, (name) => `\u0000secret:${name}`));
}

/** True when an output journaled at `storedAtMs` may still be used at `nowMs` by a step caching for `ttlMs`. */
export const isFresh = (storedAtMs: number, nowMs: number, ttlMs: number): boolean =>
  Number.isFinite(storedAtMs) && nowMs - storedAtMs <= ttlMs;
