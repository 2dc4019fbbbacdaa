import { DiscardPolicy, jetstream, RetentionPolicy, StorageType, type StreamConfig } from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { ExecutionId, SharedRunId, STEP_CACHE_LIMITS, StepCacheKey, StepId } from "../contracts/index.ts";
import type { EventStore, StreamLayout } from "../streams/index.ts";
import { isNotFound } from "../streams/nats-errors.ts";
import { streamReplicas } from "../streams/replicas.ts";

/**
 * The step cache's index (docs/step-cache.md): a stream used like a NATS KV bucket, one subject per
 * key (`<prefix>-cache.<tenant>.<key>`), the last entry wins. An entry only points at a journaled
 * `exec.step-completed` carrying the key; the runtime reads that completion from the journal
 * before using it, so an entry proves nothing by itself and the index can be rebuilt from the
 * journals (rebuildStepCache). Tenant-scoped subjects let a runtime's NATS rights name its
 * tenants' keys only (docs/nats-identities.md).
 */
export const stepCacheStreamOf = (layout: StreamLayout): string => `${layout.eventStream}_STEP_CACHE`;
export const stepCachePrefixOf = (layout: StreamLayout): string => `${layout.eventPrefix}-cache`;

/** Entries older than the longest TTL a step may ask for (plus a day) age out of the stream. */
export function stepCacheStreamConfig(
  layout: StreamLayout,
  replicas = streamReplicas(),
): Partial<StreamConfig> & { name: string } {
  return {
    name: stepCacheStreamOf(layout),
    subjects: [`${stepCachePrefixOf(layout)}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    max_msgs_per_subject: 1,
    max_age: nanos(STEP_CACHE_LIMITS.maxTtlMs + 86_400_000),
    num_replicas: replicas,
    allow_direct: true,
  };
}

/** One entry: the completion (run, execution, step) that holds the output, its digest and when it was journaled. */
export const StepCacheEntry = z
  .object({
    sharedRunId: SharedRunId,
    executionId: ExecutionId,
    stepId: StepId,
    outputDigest: z.string().regex(/^[a-f0-9]{64}$/),
    storedAt: z.iso.datetime(),
  })
  .strict();
export type StepCacheEntry = z.infer<typeof StepCacheEntry>;

/**
 * A cleared key (`DELETE /v1/step-cache/:key`): written over the key's entry (one message per
 * subject), so a lookup finds no entry and misses; the next completion of the step writes an entry
 * again. `rebuildStepCache` keeps it over completions journaled before `at`.
 */
export const StepCacheCleared = z
  .object({ cleared: z.object({ at: z.iso.datetime(), by: z.string().min(1).max(200) }).strict() })
  .strict();
export type StepCacheCleared = z.infer<typeof StepCacheCleared>;

/** One listed key: its entry and when the index got it. */
export interface StepCacheListing {
  readonly key: string;
  readonly entry: StepCacheEntry;
  readonly indexedAt: string;
}

export interface StepCacheStore {
  /** The entry of `key` for `tenantId` (undefined when none, cleared, or when it does not parse). */
  get(tenantId: string, key: string): Promise<StepCacheEntry | undefined>;
  put(tenantId: string, key: string, entry: StepCacheEntry): Promise<void>;
  /** The clear written over `key` for `tenantId`, if that is what the key holds now. */
  clearedOf(tenantId: string, key: string): Promise<StepCacheCleared["cleared"] | undefined>;
  /** Writes a clear over `key` of `tenantId` when it holds an entry (true); false, writing nothing, when not. */
  clear(tenantId: string, key: string, cleared: StepCacheCleared["cleared"]): Promise<boolean>;
  /**
   * The tenant's live entries (cleared keys left out), ordered by key, at most `limit` of the keys
   * after `after`; `next` is the last key looked at when more keys follow.
   */
  list(
    tenantId: string,
    page: { readonly after?: string; readonly limit: number },
  ): Promise<{ readonly entries: StepCacheListing[]; readonly next?: string }>;
}

export function createStepCacheStore(nc: NatsConnection, layout: StreamLayout): StepCacheStore {
  const stream = stepCacheStreamOf(layout);
  const js = jetstream(nc);
  const subjectOf = (tenantId: string, key: string) => {
    StepCacheKey.parse(key);
    return `${stepCachePrefixOf(layout)}.${tenantId}.${key}`;
  };
  const last = async (tenantId: string, key: string) => {
    const jsm = await js.jetstreamManager();
    // Subject-form Direct Get: the subject (tenant and key) is in the request subject, where rights see it.
    const m = await jsm.direct.getMessage(stream, { last_by_subj: subjectOf(tenantId, key) }).catch((e: unknown) => {
      if (isNotFound(e)) return null;
      throw e;
    });
    return m ? { json: m.json<unknown>(), time: m.time.toISOString() } : undefined;
  };
  const entryOf = (v: unknown) => {
    const parsed = StepCacheEntry.safeParse(v);
    return parsed.success ? parsed.data : undefined;
  };
  return {
    async get(tenantId, key) {
      return entryOf((await last(tenantId, key))?.json);
    },
    async put(tenantId, key, entry) {
      await js.publish(subjectOf(tenantId, key), JSON.stringify(StepCacheEntry.parse(entry)));
    },
    async clearedOf(tenantId, key) {
      const parsed = StepCacheCleared.safeParse((await last(tenantId, key))?.json);
      return parsed.success ? parsed.data.cleared : undefined;
    },
    async clear(tenantId, key, cleared) {
      // Only a key holding an entry is cleared: nothing is written for a key the tenant never had.
      if (entryOf((await last(tenantId, key))?.json) === undefined) return false;
      await js.publish(subjectOf(tenantId, key), JSON.stringify(StepCacheCleared.parse({ cleared })));
      return true;
    },
    async list(tenantId, { after, limit }) {
      const jsm = await js.jetstreamManager();
      const prefix = `${stepCachePrefixOf(layout)}.${tenantId}.`;
      // The subjects of this tenant's keys only (the filter names the tenant); their entries by subject.
      const info = await jsm.streams.info(stream, { subjects_filter: `${prefix}*` });
      const keys = Object.keys(info.state.subjects ?? {})
        .map((s) => s.slice(prefix.length))
        .filter((k) => after === undefined || k > after)
        .sort();
      const page = keys.slice(0, limit);
      const found = await Promise.all(page.map(async (key) => ({ key, m: await last(tenantId, key) })));
      const entries = found.flatMap(({ key, m }) => {
        const entry = entryOf(m?.json);
        return entry && m ? [{ key, entry, indexedAt: m.time }] : [];
      });
      return { entries, ...(keys.length > limit ? { next: page.at(-1)! } : {}) };
    },
  };
}

/**
 * Rebuilds a tenant's cache index from the event stream: one entry per key, from the latest
 * `exec.step-completed` carrying it (its run from the journal's `exec.started`). What a lost or purged cache stream is recovered with; returns
 * how many keys it wrote. A key cleared after its latest completion stays cleared (a clear lost with
 * the stream is not: its key comes back).
 */
export async function rebuildStepCache(
  store: EventStore,
  layout: StreamLayout,
  cache: StepCacheStore,
  tenantId: string,
): Promise<number> {
  const latest = new Map<string, StepCacheEntry>();
  const runOf = new Map<string, SharedRunId>();
  const execs = `${layout.eventPrefix}.exec.${tenantId}.*`;
  await store.replay(
    { seq: 1 },
    (e) => {
      const executionId = e.subject.split(".").at(-2) as ExecutionId;
      if (e.event.type === "exec.started") runOf.set(executionId, e.event.data.sharedRunId);
      const sharedRunId = runOf.get(executionId);
      if (e.event.type !== "exec.step-completed" || !e.event.data.cacheKey || !sharedRunId) return;
      latest.set(e.event.data.cacheKey, {
        sharedRunId,
        executionId,
        stepId: e.event.data.stepId,
        outputDigest: e.event.data.outputDigest,
        storedAt: e.event.occurredAt,
      });
    },
    { filter: [`${execs}.started`, `${execs}.step-completed`] },
  );
  let written = 0;
  for (const [key, entry] of latest) {
    const cleared = await cache.clearedOf(tenantId, key);
    if (cleared && cleared.at >= entry.storedAt) continue;
    await cache.put(tenantId, key, entry);
    written += 1;
  }
  return written;
}
