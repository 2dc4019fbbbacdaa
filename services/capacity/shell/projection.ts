import type { JetStreamClient, JsMsg } from "@nats-io/jetstream";
import { decodeEvent, RuntimeInstanceId, type Heartbeat } from "../../../contracts/index.ts";
import { evolveCapacity, type CapacityInput, type RuntimeEvent } from "../../../aggregates/capacity/fold.ts";
import { rankOf, type CapacityDescriptor } from "../../../aggregates/capacity/descriptor.ts";
import type { CapacityViewStore, DescriptorVersion } from "../../../platform/capacity-view.ts";
import { follow, type Follower } from "../../../platform/follow.ts";
import { storedHeartbeat, type Skip, type StreamLayout } from "../../../streams/index.ts";

export interface CapacityProjectionDeps {
  readonly js: JetStreamClient;
  readonly layout: StreamLayout;
  readonly view: CapacityViewStore<CapacityDescriptor>;
  readonly controlPlaneId: string;
  readonly onError?: (e: unknown) => void;
  /** Where a message that cannot be folded is recorded before it is stepped over (default: dropped silently). */
  readonly onSkip?: (s: Skip) => void;
  /**
   * Ended descriptors (fenced, retired) kept in memory at most (`DROVER_MAX_ENDED_RUNTIMES`), the
   * first to end leave first; the view keeps them, and one dropped is read back from the view before
   * anything is folded into it. Undefined: all.
   */
  readonly maxEnded?: number;
}

/** What a rebuild folded: counted from its start until it caught up (live inputs included). */
export interface RebuildFacts {
  readonly eventsFolded: number;
  /** Stream sequence of the last runtime event folded (0 = none). */
  readonly lastSeq: number;
  readonly heartbeatsFolded: number;
}

export interface CapacityProjection {
  /** Resolves once the runtime events and heartbeats present at start are folded into the view. */
  readonly ready: Promise<void>;
  /**
   * Folds everything again from stream sequence 1 and then replaces the view at once (readers never
   * see it empty); concurrent calls run one after another.
   */
  rebuild(): Promise<RebuildFacts>;
  /** Descriptors in memory and ended ones dropped from memory so far (tests, logs). */
  memory(): { readonly cached: number; readonly dropped: number };
  stop(): Promise<void>;
}

const CHECKPOINT = "runtime-events";
/** Inputs (runtime events, heartbeats) folded in one batch at most before their follower waits for the queue. */
const MAX_BATCH = 1024;

/**
 * Whether the put of `next` (folded from `before` and `input`) is announced: the runtime became ready
 * (its capacity published), or a ready runtime's incarnation beat for the first time. Nothing else:
 * each announcement is an admission pass, and announcing every runtime event (a dozen per runtime's
 * life) made admission a busy process during a recovery burst.
 */
const announces = (before: CapacityDescriptor | undefined, next: CapacityDescriptor, input: CapacityInput): boolean =>
  next.status === "ready" &&
  (before?.status !== "ready" ||
    (input.kind === "heartbeat" && before.beats[input.beat.hostIncarnation] === undefined));

/**
 * A descriptor's version in the shared view: the runtime-event sequence folded, then its latest
 * beat's stored time, then that beat's number (beats stored in the same millisecond).
 */
function versionOf(d: CapacityDescriptor): DescriptorVersion {
  let at = 0,
    beat = 0;
  for (const b of Object.values(d.beats)) {
    const t = Date.parse(b.at);
    if (t > at || (t === at && b.beat > beat)) [at, beat] = [t, b.beat];
  }
  return [d.lastSeq, at, beat];
}

/**
 * The capacity projection: folds `<prefix>.runtime.>` and the heartbeat stream into one descriptor
 * per runtime of this control plane and writes it to the Redis view. Inputs from both streams go
 * through one serial queue, so a descriptor's writes never reorder; events are idempotent by stream
 * sequence (the fold skips seq ≤ lastSeq) and the checkpoint is written after the view, so a crash
 * re-folds at most a few events harmlessly. Nobody else writes the view.
 */
export async function startCapacityProjection(deps: CapacityProjectionDeps): Promise<CapacityProjection> {
  const cache = new Map<string, CapacityDescriptor>();
  let queue: Promise<void> = Promise.resolve();
  let followers: Follower[] = [];
  // While a rebuild folds from sequence 1 it writes nothing: readers keep the old view until the
  // rebuilt one replaces it at once (an empty view would send admission asking for scale-outs).
  let shadow = false;
  let folded = { eventsFolded: 0, lastSeq: 0, heartbeatsFolded: 0 };
  const eventPrefix = `${deps.layout.eventPrefix}.runtime.`;
  // Ended descriptors in memory in the order they ended, and how many left memory (never the view).
  const ended = new Set<string>();
  let dropped = 0;
  const noteEnded = (id: string, d: CapacityDescriptor) => {
    if (rankOf(d.status) < rankOf("fenced") || ended.has(id)) return;
    ended.add(id);
    if (deps.maxEnded === undefined) return;
    for (const old of ended) {
      if (ended.size <= deps.maxEnded) break;
      ended.delete(old);
      cache.delete(old);
      dropped++;
    }
  };
  const rebound = () => {
    ended.clear();
    for (const [id, d] of cache) noteEnded(id, d);
  };

  /**
   * Folds one input into a runtime's descriptor in memory; returns the put it calls for (undefined
   * in shadow mode, or for a runtime of another control plane: only runtimes registered by this one
   * enter its view; others stay in memory). A runtime that became placeable is announced, so
   * admission looks at once rather than at its next tick (a replacement's capacity waited about half
   * a tick for its recovered run).
   */
  const fold = async (runtimeInstanceId: string, input: CapacityInput) => {
    // A descriptor that left memory is read back from the view (which kept it) before it is folded.
    const before =
      cache.get(runtimeInstanceId) ?? (dropped > 0 && !shadow ? await deps.view.get(runtimeInstanceId) : undefined);
    const next = evolveCapacity(before, input);
    cache.set(runtimeInstanceId, next);
    if (shadow) return undefined;
    noteEnded(runtimeInstanceId, next);
    return next.registration?.controlPlaneId === deps.controlPlaneId
      ? { d: next, announce: announces(before, next, input) }
      : undefined;
  };

  // Runtime events and heartbeats are folded in batches: what arrived while the queue was busy is
  // folded one by one in memory, in arrival order, then each runtime's descriptor is written once
  // (all writes sent together) and the checkpoint once, after them, at the batch's last event. One
  // round trip per beat fell behind in a P=20 recovery (folded beats 3-5 s old: live runtimes looked
  // stale to admission); two per event (descriptor, checkpoint) put a replacement's
  // `capacity-published` behind the refill's pool-member events, seconds under load.
  let pending: { readonly id?: string; readonly input?: CapacityInput; readonly seq?: number }[] = [];
  const flush = async () => {
    const batch = pending;
    pending = [];
    const writes = new Map<string, { d: CapacityDescriptor; announce: boolean }>();
    let seq: number | undefined;
    for (const b of batch) {
      if (b.seq !== undefined) seq = b.seq;
      const put = b.id !== undefined && b.input ? await fold(b.id, b.input) : undefined;
      if (put) {
        const announce = (writes.get(b.id!)?.announce ?? false) || put.announce;
        writes.set(b.id!, { d: put.d, announce });
      }
    }
    if (shadow) return;
    await Promise.all([...writes].map(([id, w]) => deps.view.put(id, w.d, versionOf(w.d), w.announce)));
    if (seq !== undefined) await deps.view.setCheckpoint(CHECKPOINT, seq);
  };
  /** Queues one input for the next batch; a batch this large is waited for (bounded memory), else not awaited. */
  const enqueue = (item: (typeof pending)[number]) => {
    pending.push(item);
    if (pending.length === 1) {
      queue = queue.then(flush);
      queue.catch((e) => deps.onError?.(e));
    }
    return pending.length >= MAX_BATCH ? queue : undefined;
  };

  // A message that does not decode (garbage, an unknown type, a newer schema) is recorded and
  // stepped over: one bad message must never stop the view every placement depends on.
  const skip = (m: JsMsg, e: unknown, stream: string) =>
    deps.onSkip?.({ seq: m.seq, subject: m.subject, stream, error: e instanceof Error ? e.message : String(e) });
  const onEvent = (m: JsMsg) => {
    let runtimeInstanceId: RuntimeInstanceId;
    let event: RuntimeEvent;
    try {
      // The subject's id token is parsed here, once; a subject that names no valid id is stepped over.
      runtimeInstanceId = RuntimeInstanceId.parse(m.subject.slice(eventPrefix.length).split(".")[0]);
      event = decodeEvent(m.data, { seq: m.seq, subject: m.subject }) as RuntimeEvent;
      if (!event.type.startsWith("runtime.")) throw new Error(`${event.type} on a runtime subject`);
    } catch (e) {
      skip(m, e, deps.layout.eventStream);
      // Past it, through the serial queue: the checkpoint never overtakes a write still queued.
      return enqueue({ seq: m.seq });
    }
    folded = { ...folded, eventsFolded: folded.eventsFolded + 1, lastSeq: m.seq };
    return enqueue({
      id: runtimeInstanceId,
      input: { kind: "event", seq: m.seq, runtimeInstanceId, event },
      seq: m.seq,
    });
  };
  const onBeat = (m: JsMsg) => {
    let beat: Heartbeat;
    try {
      // The runtime from the subject, the time from the server (streams/heartbeat-message.ts).
      beat = storedHeartbeat(deps.layout.heartbeatPrefix, m, Math.floor(m.info.timestampNanos / 1e6));
    } catch (e) {
      return skip(m, e, deps.layout.heartbeatStream);
    }
    folded = { ...folded, heartbeatsFolded: folded.heartbeatsFolded + 1 };
    return enqueue({ id: beat.runtimeInstanceId, input: { kind: "heartbeat", beat } });
  };

  const start = async (fromSeq: number) => {
    // Descriptors are folded from scratch in memory; the stored view is overwritten as events arrive.
    if (fromSeq > 1) for (const d of await deps.view.all()) cache.set(d.runtimeInstanceId, d);
    if (!shadow) rebound();
    const events = await follow(
      deps.js,
      { stream: deps.layout.eventStream, filters: [`${eventPrefix}>`], fromSeq },
      onEvent,
    );
    const beats = await follow(
      deps.js,
      { stream: deps.layout.heartbeatStream, filters: [`${deps.layout.heartbeatPrefix}.>`], lastPerSubject: true },
      onBeat,
    );
    followers = [events, beats];
    for (const f of followers) f.done.catch((e) => deps.onError?.(e));
    await Promise.all(followers.map((f) => f.caughtUp));
    await queue;
  };
  const stopFollowers = async () => {
    await Promise.all(followers.map((f) => f.stop()));
    followers = [];
    await queue;
  };

  const checkpoint = await deps.view.getCheckpoint(CHECKPOINT);
  if (checkpoint === 0) await deps.view.clear();
  const ready = start(checkpoint + 1);
  // Two rebuilds at once would each start followers and leak the first pair: they queue instead.
  let rebuilding: Promise<unknown> = ready;
  const rebuildOnce = async (): Promise<RebuildFacts> => {
    await stopFollowers();
    cache.clear();
    folded = { eventsFolded: 0, lastSeq: 0, heartbeatsFolded: 0 };
    shadow = true;
    try {
      await start(1);
    } catch (e) {
      shadow = false; // the old view stays; the caller learns the rebuild failed
      throw e;
    }
    // In the serial queue: everything folded before is in the new view, everything after is written as usual.
    queue = queue.then(async () => {
      shadow = false;
      const mine = [...cache].filter(([, d]) => d.registration?.controlPlaneId === deps.controlPlaneId);
      await deps.view.replaceAll(
        mine.map(([id, d]) => [id, d, versionOf(d)] as const),
        { name: CHECKPOINT, seq: folded.lastSeq },
      );
      // The rebuild folded every descriptor into memory: the bound applies again from here.
      rebound();
    });
    await queue;
    return folded;
  };
  return {
    ready,
    memory: () => ({ cached: cache.size, dropped }),
    rebuild() {
      const next = rebuilding.then(rebuildOnce);
      rebuilding = next.catch(() => undefined);
      return next;
    },
    stop: async () => {
      await ready.catch(() => undefined);
      await stopFollowers();
    },
  };
}
