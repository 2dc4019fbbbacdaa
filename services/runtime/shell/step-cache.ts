import type { Clock } from "../../../platform/clock.ts";
import type { DataOf, DroverEvent, RefScope, Step } from "../../../contracts/index.ts";
import { foldExecution, type SequencedEvent } from "../../../aggregates/execution.ts";
import {
  cacheKeySeed,
  cacheKindOf,
  isFresh,
  resolvedInputText,
  workerVersionOf,
} from "../../../aggregates/step-cache.ts";
import type { OutputStore } from "../../../platform/output-store.ts";
import type { StepCacheStore } from "../../../platform/step-cache-store.ts";
import type { OpenedExecution } from "./execution-open.ts";
import { recordedOutput } from "./step-output.ts";
import { sha256Hex } from "./step-runners.ts";

/** What the step cache needs (docs/step-cache.md): its index and a reader of the tenant's journals. */
export interface StepCacheEnv {
  readonly index: Pick<StepCacheStore, "get" | "put">;
  /** An execution's journal, read on the tenant's own subjects (never another tenant's). */
  readonly journal: (tenantId: string, executionId: string) => Promise<readonly SequencedEvent[]>;
}

export interface CacheHost {
  readonly cache: StepCacheEnv;
  readonly opened: OpenedExecution;
  readonly clock: Clock;
  readonly log: (fields: Record<string, unknown>) => void;
  readonly outputs?: OutputStore;
  /** The tenant worker's version (sha256 of its module); absent on runtimes without a worker. */
  readonly workerVersion?: string;
}

/** The cache host of an execution, when its runtime has a step cache. */
export function cacheHostOf(
  env: {
    readonly stepCache?: StepCacheEnv;
    readonly clock: Clock;
    readonly log: CacheHost["log"];
    readonly outputs?: OutputStore;
    readonly worker?: { readonly version: string };
  },
  opened: OpenedExecution,
): CacheHost | undefined {
  if (!env.stepCache) return undefined;
  const { clock, log, outputs, worker } = env;
  return {
    cache: env.stepCache,
    opened,
    clock,
    log,
    ...(outputs ? { outputs } : {}),
    ...(worker ? { workerVersion: worker.version } : {}),
  };
}

/**
 * The cache key of a step with `cache`: sha256 over tenant, worker version, kind and the digest of
 * its resolved input. Undefined when the step takes no cache, has no worker version, or its input
 * does not resolve (the step then runs, and fails as it would).
 */
export function cacheKeyOf(step: Step, scope: RefScope, host: CacheHost): string | undefined {
  if (!step.cache) return undefined;
  const workerVersion = workerVersionOf(step, host.workerVersion);
  if (!workerVersion) return undefined;
  let text: string;
  try {
    text = resolvedInputText(step, scope);
  } catch {
    return undefined;
  }
  const kind = cacheKindOf(step);
  return sha256Hex(cacheKeySeed({ tenantId: host.opened.tenantId, workerVersion, kind, inputDigest: sha256Hex(text) }));
}

/**
 * A step's cache lookup before it runs: its key (undefined when it takes no cache, the runtime has
 * no cache, or its input does not resolve: it then runs and fails as it would) and, when the key hits, the journaled hit.
 */
export async function cachedStep(
  step: Step,
  scope: () => Promise<RefScope>,
  host: CacheHost | undefined,
  signal: AbortSignal,
): Promise<{ readonly key?: string; readonly hit?: { readonly value: unknown; readonly outputDigest: string } }> {
  if (!step.cache || !host) return {};
  let key: string | undefined;
  try {
    key = cacheKeyOf(step, await scope(), host);
  } catch {
    return {};
  }
  if (!key) return {};
  const hit = await journalCacheHit(step, key, host, signal);
  return hit ? { key, hit } : { key };
}

/**
 * Looks `key` up and, on a hit, journals it: `exec.step-reused` with `cache` naming the run,
 * execution and step the output came from (conditionally, like every exec append). A hit is an
 * index entry whose journal (the same tenant's) holds, as that step's counted completion, an
 * executed `step-completed` carrying this key and digest, journaled at most the step's `ttlMs` ago;
 * anything else (or an index, journal or object store that cannot be read) is a miss. Returns the
 * output's value and digest, or undefined (run the step; after `signal` aborted nothing is written).
 */
export async function journalCacheHit(
  step: Step,
  key: string,
  host: CacheHost,
  signal: AbortSignal,
): Promise<{ readonly value: unknown; readonly outputDigest: string } | undefined> {
  const { tenantId } = host.opened;
  const ttlMs = step.cache!.ttlMs;
  const now = host.clock.now().getTime();
  let entry;
  let journal: readonly SequencedEvent[];
  try {
    entry = await host.cache.index.get(tenantId, key);
    if (!entry || !isFresh(Date.parse(entry.storedAt), now, ttlMs)) return undefined;
    journal = await host.cache.journal(tenantId, entry.executionId);
  } catch (e) {
    host.log({ event: "step-cache-unavailable", stepId: step.id, detail: String(e).slice(0, 300) });
    return undefined;
  }
  const state = foldExecution(journal);
  const done = state.completed.get(entry.stepId);
  const source = journal.find((e) => e.seq === done?.seq)?.event;
  if (
    !done ||
    done.reusedFrom ||
    source?.type !== "exec.step-completed" ||
    source.data.cacheKey !== key ||
    done.outputDigest !== entry.outputDigest ||
    state.started?.sharedRunId !== entry.sharedRunId ||
    !isFresh(Date.parse(source.occurredAt), now, ttlMs)
  )
    return undefined;
  let value: unknown;
  try {
    value = await recordedOutput(done, host.outputs);
  } catch (e) {
    host.log({ event: "step-cache-unavailable", stepId: step.id, detail: String(e).slice(0, 300) });
    return undefined;
  }
  // After cancel or lost ownership nothing more is written.
  if (signal.aborted) return undefined;
  await host.opened.exec.append(
    host.opened.emit("exec.step-reused", {
      stepId: step.id as DataOf<"exec.step-reused">["stepId"],
      fromRun: entry.sharedRunId,
      fromExecutionId: entry.executionId,
      ...(done.outputRef
        ? { outputRef: done.outputRef }
        : { output: done.output as DataOf<"exec.step-reused">["output"] }),
      outputDigest: done.outputDigest,
      cache: { key, fromStepId: entry.stepId, storedAt: source.occurredAt },
    }),
  );
  return { value, outputDigest: done.outputDigest };
}

/**
 * Points `key` at a step-completed just journaled (`completed`, carrying the key). Only an executed,
 * durable completion is ever indexed, never a failed attempt. A failed write is logged, not fatal:
 * the step completed, the next run with this input executes it again.
 */
export async function indexCompletion(key: string, completed: DroverEvent, host: CacheHost | undefined): Promise<void> {
  if (completed.type !== "exec.step-completed" || !host) return;
  try {
    await host.cache.index.put(host.opened.tenantId, key, {
      sharedRunId: host.opened.sharedRunId,
      executionId: host.opened.executionId,
      stepId: completed.data.stepId,
      outputDigest: completed.data.outputDigest,
      storedAt: completed.occurredAt,
    });
  } catch (e) {
    host.log({ event: "step-cache-unavailable", stepId: completed.data.stepId, detail: String(e).slice(0, 300) });
  }
}
