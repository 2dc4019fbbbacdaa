import { DeliverPolicy, type JsMsg } from "@nats-io/jetstream";
import { DagMemo, isDroverError } from "../contracts/index.ts";
import type { CheckpointStore } from "./checkpoints.ts";
import { connectionOf, type NatsHandle } from "./connection.ts";
import type { StreamLayout } from "./layout.ts";
import { replay } from "./replay.ts";
import { storeContext, type EventStoreOptions, type StoreContext } from "./store-context.ts";
import { toStoredEvent } from "./stored.ts";
import type { Skip } from "./skip.ts";
import type { StoredEvent } from "./types.ts";
import { burstReader, LiveReadLost, type BurstReader } from "./live-bursts.ts";
import { isJetStreamUnavailable } from "./nats-errors.ts";

/** Pause before the live loop restarts after a failed read (doubling per failure in a row, up to the max). */
const LIVE_RESTART_MS = 250;
const LIVE_RESTART_MAX_MS = 5_000;

/** A read model fed from the event stream. Projections only fold: no appends, no side effects. */
export interface Projection {
  /** Stable name: the checkpoint key. */
  readonly name: string;
  /** Subjects to read (default: every event). */
  readonly filter?: string | string[];
  /**
   * Applies one event. The runner never applies a sequence at or below the checkpoint, but a crash
   * between `apply` and the checkpoint save re-applies the last events, so `apply` must be
   * idempotent by `e.seq` (e.g. store the seq with the row and ignore older ones).
   */
  apply(e: StoredEvent): void | Promise<void>;
  /**
   * Applies consecutive events at once (same idempotency rule as `apply`; on a throw the runner
   * retries the whole batch). Optional: a store with a high cost per write (FerretDB commits each
   * write on its own) folds many events in memory and writes each document once.
   */
  applyBatch?(events: readonly StoredEvent[]): Promise<void>;
  /** Clears the read model before a rebuild from sequence 1. */
  reset?(): void | Promise<void>;
}

export interface ProjectionRunner {
  /** Sequence applied up to (the checkpoint as last saved or about to be saved). */
  readonly position: number;
  /** Applies everything up to the stream's end as of the call; returns the position. */
  catchUp(): Promise<number>;
  /** Resets the read model and checkpoint, then catches up from sequence 1. */
  rebuild(): Promise<number>;
  /** Follows the stream live from the checkpoint until `stop()`. Rejects `failed` on a non-retryable apply error. */
  start(): Promise<void>;
  /** Resolves once `position >= seq` (read-your-writes after an append); rejects after `timeoutMs`. */
  waitFor(seq: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
  /** Settles when the live loop ends: resolves on stop, rejects with the error that stopped it. */
  readonly done: Promise<void>;
}

export interface ProjectionRunnerOptions extends EventStoreOptions {
  /** Save the checkpoint after this many applied events (default 1: after each); always on stop. */
  readonly checkpointEvery?: number;
  /** Delay before re-applying an event whose apply failed with a retryable error (default 200 ms, doubling to 5 s). */
  readonly retryDelayMs?: number;
  /** Most events handed to `applyBatch` at once (default 256); live, a batch also ends when nothing more is pending. */
  readonly batchSize?: number;
  /**
   * Live, most events in one batch (default `batchSize`; catch-up and rebuild keep `batchSize`). A
   * store whose per-document rewrite is dear (FerretDB) takes a larger one under load, so a burst of
   * a window is written once rather than split into flushes that rewrite the same documents.
   */
  readonly liveBatchSize?: number;
  /**
   * Live, once caught up, how long (ms) applied events may be held for more to join their batch
   * before the batch is written and the checkpoint saved (default 0: at once). Measured from the
   * first event held, so a steady trickle is written at least this often: a store with a high cost
   * per write (FerretDB) then writes a chain of steps once per window instead of once per step.
   */
  readonly lingerMs?: number;
  /**
   * Live, how long (ms) a busy stream's events may be held at most (default `lingerMs`: never longer):
   * a window in whose last `lingerMs` another event was held is held on, up to this long after its
   * first event. A quiet stream's event still waits `lingerMs` only; a busy stream is written once per
   * `maxLingerMs`, so a store whose per-document rewrite is dear rewrites each busy document less often.
   */
  readonly maxLingerMs?: number;
  /**
   * Where an event that does not decode (garbage, an unknown type, a newer schema version), or that
   * the projection refuses with a non-retryable error, is recorded before the runner steps over it.
   */
  readonly onSkip?: (s: Skip) => void;
  /** Told each time the live loop starts again after a failed read, and how long it waits first. */
  readonly onRestart?: (e: unknown, delayMs: number) => void;
}

/**
 * Runs `projection` over the event stream: idempotent by stream sequence (skips seq <= checkpoint),
 * checkpointed through `checkpoints`, rebuildable from sequence 1. An `apply` that throws a
 * retryable or unknown error is retried (with backoff) on the same event — the read model's store
 * being down must not skip events. Poison never stops it: an event that does not decode, or that
 * `apply` refuses with a non-retryable error (e.g. contract-violation), is reported to `onSkip` and
 * stepped over (a refused batch is applied again one event at a time, so only the bad one is skipped).
 */
export function createProjectionRunner(
  handle: NatsHandle,
  layout: StreamLayout,
  projection: Projection,
  checkpoints: CheckpointStore,
  opts: ProjectionRunnerOptions = {},
): ProjectionRunner {
  const ctx: StoreContext = storeContext(handle, layout, opts);
  const nc = connectionOf(handle);
  const every = Math.max(1, opts.checkpointEvery ?? 1);
  let position = -1; // unknown until loaded
  let unsaved = 0;
  let reader$: BurstReader | undefined;
  let wake: (() => void) | undefined;
  let restartDelay = LIVE_RESTART_MS;
  let stopping = false;
  let started = false;
  const waiters = new Set<{ seq: number; resolve: () => void }>();
  let settle!: { resolve: () => void; reject: (e: unknown) => void };
  const done = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject };
  });
  done.catch(() => undefined); // observed through `done` by whoever cares

  const load = async () => {
    if (position < 0) position = await checkpoints.load(projection.name);
    return position;
  };
  const save = async () => {
    if (unsaved > 0) {
      await checkpoints.save(projection.name, position);
      unsaved = 0;
    }
  };

  const batchSize = Math.max(1, opts.batchSize ?? 256);
  const liveBatchSize = Math.max(1, opts.liveBatchSize ?? batchSize);
  let batch: StoredEvent[] = [];

  async function applyOne(e: StoredEvent, limit = batchSize): Promise<void> {
    if (e.seq <= (batch.at(-1)?.seq ?? position)) return;
    if (projection.applyBatch) {
      batch.push(e);
      if (batch.length >= limit) await flush();
      return;
    }
    await applied([e], () => projection.apply(e));
  }

  /** Applies what is batched (no-op when empty). */
  async function flush(): Promise<void> {
    if (batch.length === 0) return;
    const events = batch;
    batch = [];
    await applied(events, () => projection.applyBatch!(events));
  }

  async function applied(events: readonly StoredEvent[], fn: () => void | Promise<void>): Promise<void> {
    for (let delay = opts.retryDelayMs ?? 200; ; delay = Math.min(delay * 2, 5000)) {
      try {
        await fn();
        break;
      } catch (err) {
        if (stopping) throw err;
        if (isDroverError(err) && !err.retryable) {
          if (events.length > 1) {
            for (const e of events)
              await applied([e], () => (projection.applyBatch ? projection.applyBatch([e]) : projection.apply(e)));
            return;
          }
          return skipped(events[0]!, err);
        }
        await new Promise((r) => setTimeout(r, delay));
      }
    }
    await advance(events.at(-1)!.seq, events.length);
  }

  /** Steps over a message the projection cannot use: recorded, then counted as applied. */
  async function skipped(m: { seq: number; subject: string }, err: unknown): Promise<void> {
    await flush();
    opts.onSkip?.({ seq: m.seq, subject: m.subject, error: err instanceof Error ? err.message : String(err) });
    await advance(m.seq, 1);
  }

  async function advance(seq: number, count: number): Promise<void> {
    position = seq;
    unsaved += count;
    if (unsaved >= every) await save();
    for (const w of waiters)
      if (position >= w.seq) {
        waiters.delete(w);
        w.resolve();
      }
  }

  // Most runs carry a DAG an earlier run carried: checking each submission's DAG in full was ~6% of
  // the forensics projector's CPU under W2 (`--cpu-prof`); the memo checks a DAG seen before by its text.
  const dags = new DagMemo();

  /** Decodes and applies one message; one that does not decode is skipped. */
  async function applyMsg(m: Parameters<typeof toStoredEvent>[0]): Promise<void> {
    let e: StoredEvent;
    try {
      e = toStoredEvent(m, dags);
    } catch (err) {
      if (m.seq > (batch.at(-1)?.seq ?? position)) await skipped(m, err);
      return;
    }
    await applyOne(e, liveBatchSize);
  }

  /** Sleeps until `at` (performance.now() time) or until stopped. */
  const until = (at: number) =>
    new Promise<void>((ok) => {
      const t = setTimeout(ok, Math.max(0, at - performance.now()));
      wake = () => {
        clearTimeout(t);
        ok();
      };
    }).finally(() => (wake = undefined));

  async function live(): Promise<void> {
    const from = (await load()) + 1;
    const filters =
      projection.filter === undefined ? [`${layout.eventPrefix}.>`] : ([] as string[]).concat(projection.filter);
    const oc = await ctx.js.consumers
      .get(layout.eventStream, {
        filter_subjects: filters,
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: from,
      })
      .catch((e: unknown) => Promise.reject(new LiveReadLost(e)));
    const reader = burstReader(oc);
    reader$ = reader;
    if (stopping) reader.close();
    const lingerMs = opts.lingerMs ?? 0;
    const maxLingerMs = Math.max(lingerMs, opts.maxLingerMs ?? lingerMs);
    // Caught up with applied events held (lingerMs > 0): when the window opened and by when it is read again.
    let window: { opened: number; due: number } | undefined;
    let pending = 0; // matching messages behind the last one delivered, as it said
    try {
      while (!stopping) {
        let msgs: JsMsg[];
        let closing = false;
        if (pending > 0) msgs = await reader.take(Math.min(pending, liveBatchSize));
        else if (window === undefined) msgs = await reader.wait();
        else {
          await until(window.due);
          if (stopping) break;
          // What came within the window, in one burst. Something came: a busy stream, so the window
          // is held on, read again `lingerMs` later, up to `maxLingerMs` after it opened.
          msgs = await reader.drain(liveBatchSize);
          const now = performance.now();
          window.due = Math.min(now + lingerMs, window.opened + maxLingerMs);
          closing = msgs.length === 0 || window.due - now < 1;
        }
        // A read ends empty at once when the connection closed (a stop): the loop ends, as the
        // consumer's messages did.
        if (msgs.length === 0 && nc.isClosed()) break;
        if (msgs.length > 0) restartDelay = LIVE_RESTART_MS; // reading again: the next failure waits the least
        for (const m of msgs) await applyMsg(m);
        pending = msgs.at(-1)?.info.pending ?? 0;
        if (closing) window = undefined;
        // Caught up (nothing pending): apply the batch and save now, or by the end of a window
        // (closing: now, even if more is pending), or both would lag until the next event.
        if (closing || (pending === 0 && msgs.length > 0 && window === undefined)) {
          if (lingerMs > 0 && !closing) {
            const now = performance.now();
            window = { opened: now, due: now + lingerMs };
            continue;
          }
          await flush();
          await save();
        }
      }
      await flush();
    } finally {
      reader.close();
      reader$ = undefined;
      await oc.delete().catch(() => undefined); // not left for the client's 5-minute inactive threshold
    }
  }

  const runner: ProjectionRunner = {
    get position() {
      return Math.max(0, position);
    },
    async catchUp() {
      await replay(ctx, { seq: (await load()) + 1 }, (e) => applyOne(e), {
        ...(projection.filter === undefined ? {} : { filter: projection.filter }),
        onUndecodable: (u) => (u.seq > (batch.at(-1)?.seq ?? position) ? skipped(u, u.error) : undefined),
      });
      await flush();
      await save();
      return position;
    },
    async rebuild() {
      await projection.reset?.();
      position = 0;
      unsaved = 1;
      await save();
      return runner.catchUp();
    },
    async start() {
      if (started) return;
      started = true;
      // A failed read (JetStream not answering, "temporarily unavailable" while a cluster elects a
      // new leader, the consumer lost) restarts the live loop from the position, after a pause
      // that doubles while reads keep failing, instead of stopping the projection: seen in `drover
      // proof --kill-nats-leader`, where the forensics projector's consumer creation timed out (P=3),
      // or was refused with 10008 (P=10, over gRPC), during the election and the process exited.
      // A read that fails because the runner is being stopped is the stop, not a failure: the
      // forensics projector is stopped for each rebuild, and a consumer info timing out under that
      // stop ended the projection for good (`nats-leader-kill`, session 28). Re-applied events are idempotent.
      const runLive = (): void => {
        live().then(
          async () => {
            await save();
            settle.resolve();
          },
          async (e: unknown) => {
            await save().catch(() => undefined);
            const transient = isJetStreamUnavailable(e) || e instanceof LiveReadLost;
            if (!transient) return settle.reject(e);
            if (stopping) return settle.resolve();
            const delay = restartDelay;
            restartDelay = Math.min(restartDelay * 2, LIVE_RESTART_MAX_MS);
            opts.onRestart?.(e, delay);
            await until(performance.now() + delay);
            if (stopping) settle.resolve();
            else runLive();
          },
        );
      };
      runLive();
    },
    waitFor(seq, timeoutMs = 10_000) {
      if (position >= seq) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const w = {
          seq,
          resolve: () => {
            clearTimeout(t);
            resolve();
          },
        };
        const t = setTimeout(() => {
          waiters.delete(w);
          reject(
            new Error(`projection ${projection.name} did not reach ${seq} within ${timeoutMs}ms (at ${position})`),
          );
        }, timeoutMs);
        waiters.add(w);
      });
    },
    async stop() {
      stopping = true;
      if (!started) {
        started = true;
        settle.resolve();
      }
      reader$?.close();
      wake?.();
      await done.catch(() => undefined);
    },
    done,
  };
  return runner;
}
