import { DeliverPolicy } from "@nats-io/jetstream";
import { DroverError } from "../contracts/index.ts";
import { isNotFound, toStoreError } from "./nats-errors.ts";
import type { StoreContext } from "./store-context.ts";
import type { Msg } from "./scoped-read.ts";
import { toStoredEvent } from "./stored.ts";
import type { ReplayFrom, StoredEvent, Undecodable } from "./types.ts";

// Client-side buffer of the ordered consumer: big enough to stream, small enough for a slow fold.
const REPLAY_BUFFER = 256;
// The first this many matching events on one filter are read with batched Direct Gets: a roster
// catch-up of a few new runtime events took five round trips (info, first, consumer create, fetch,
// delete) and a consumer the server builds and tears down; this takes two, however many other
// events (a busy proof's step journals) the range holds. Only a longer replay goes on through a consumer.
const DIRECT_HEAD = REPLAY_BUFFER;

/**
 * Ordered replay of the event stream from a sequence (inclusive) or a time, optionally filtered,
 * up to the stream's last sequence as of the call; events appended meanwhile are not delivered.
 * Returns the sequence of the last event delivered (0 when none matched).
 *
 * The end is fixed from stream info before reading. On one filter, the first `DIRECT_HEAD` matching
 * events are read with batched Direct Gets (a catch-up: one round trip, whatever the range's length);
 * only when there are more does the rest come from an ordered consumer (flow-controlled, recreated by
 * the client on gaps), in stream order; an empty range is detected with one Direct Get per filter,
 * so a replay never waits on an idle consumer.
 *
 * Failure modes: an event that does not decode stops the replay with `contract-violation` naming
 * its stream sequence (unless `onUndecodable` takes it); a handler error stops it and propagates; no answer → `event-store-unavailable`.
 */
export async function replay(
  ctx: StoreContext,
  from: ReplayFrom,
  onEvent: (e: StoredEvent) => void | Promise<void>,
  opts: {
    filter?: string | string[];
    /** Called instead of failing for a message that does not decode (the replay goes on past it). */
    onUndecodable?: (u: Undecodable) => void | Promise<void>;
  } = {},
): Promise<number> {
  const jsm = await ctx.jsm;
  const stream = ctx.layout.eventStream;
  const filters =
    opts.filter === undefined
      ? [`${ctx.layout.eventPrefix}.>`]
      : Array.isArray(opts.filter)
        ? [...opts.filter]
        : [opts.filter];
  let endSeq: number, start: number, replicas: number;
  try {
    const info = await jsm.streams.info(stream);
    endSeq = info.state.last_seq;
    replicas = info.config.num_replicas;
    start = "seq" in from ? Math.max(1, from.seq) : await firstSeqAtOrAfterTime(ctx, from.time);
  } catch (e) {
    throw toStoreError(e, `starting a replay of ${stream}`, { filters });
  }
  if (start === 0 || start > endSeq) return 0;
  // Only on one replica: a Direct Get on R>1 may be answered by a lagging follower, and a replay must
  // not pass a shorter range off as the whole one (the consumer reads from the leader).
  const range = ctx.reader.range;
  let headLast = 0;
  if (range && replicas === 1 && filters.length === 1) {
    let msgs: Msg[];
    try {
      msgs = await range(filters[0]!, start, endSeq, DIRECT_HEAD);
    } catch (e) {
      throw toStoreError(e, `replaying ${stream} from sequence ${start}`, { filters });
    }
    headLast = await deliver(msgs, endSeq, onEvent, opts.onUndecodable);
    // Fewer than asked for: every matching event up to the end is delivered.
    if (msgs.length < DIRECT_HEAD) return headLast;
    start = msgs.at(-1)!.seq + 1;
    if (start > endSeq) return headLast;
  }

  let first = Number.POSITIVE_INFINITY;
  try {
    for (const f of filters)
      first = Math.min(first, (await ctx.reader.first(f, start))?.seq ?? Number.POSITIVE_INFINITY);
  } catch (e) {
    // Past a direct head, where the replay stopped (its handler has seen part of the range).
    if (headLast === 0) throw e;
    throw new DroverError(
      "event-store-unavailable",
      `replaying ${stream} (at sequence ${headLast} of ${endSeq}): ${(e as Error)?.message ?? String(e)}`,
      { cause: e, details: { filters, last: headLast, endSeq } },
    );
  }
  if (first > endSeq) return headLast;

  const oc = await ctx.js.consumers.get(stream, {
    filter_subjects: filters,
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: first,
  });
  const messages = await oc.consume({ max_messages: REPLAY_BUFFER });
  let last = headLast;
  let reachedEnd = false;
  let callerFailed = false; // a handler's own error propagates as it is
  const call = async (f: () => void | Promise<void>) => {
    try {
      await f();
    } catch (err) {
      callerFailed = true;
      throw err;
    }
  };
  try {
    for await (const m of messages) {
      if (m.seq > endSeq) {
        reachedEnd = true;
        break;
      }
      let e: StoredEvent | undefined;
      try {
        e = toStoredEvent(m);
      } catch (err) {
        if (!opts.onUndecodable) throw err;
        const u = { seq: m.seq, subject: m.subject, error: err instanceof Error ? err.message : String(err) };
        await call(() => opts.onUndecodable!(u));
      }
      if (e) await call(() => onEvent(e));
      last = m.seq;
      // pending counts matching messages after this one: 0 means everything up to now was delivered.
      if (m.seq >= endSeq || m.info.pending === 0) {
        reachedEnd = true;
        break;
      }
    }
    // The messages ended before the range did: the connection closed (a stop) or the consumer went
    // away. Returning would pass a partial replay off as a complete one (a projection would save
    // itself built, a fold would call itself caught up).
    if (!reachedEnd)
      throw new DroverError(
        "event-store-unavailable",
        `replay of ${stream} ended at sequence ${last} before ${endSeq}: the consumer stopped delivering (connection closed?)`,
        { details: { filters, last, endSeq } },
      );
  } catch (err) {
    if (callerFailed) throw err;
    throw toStoreError(err, `replaying ${stream} (at sequence ${last} of ${endSeq})`, { filters });
  } finally {
    // Closing the messages of a closed connection fails too; the replay's outcome is already decided.
    await messages.close().catch(() => undefined);
    // The client gives ordered consumers a 5-minute inactive threshold; frequent replays would
    // otherwise leave one server-side consumer each behind for that long.
    await oc.delete().catch(() => undefined);
  }
  return last;
}

/** Sequence of the first message stored at or after `time`, or 0 when there is none. */
async function firstSeqAtOrAfterTime(ctx: StoreContext, time: Date): Promise<number> {
  try {
    const m = await (await ctx.jsm).direct.getMessage(ctx.layout.eventStream, { start_time: time });
    return m?.seq ?? 0;
  } catch (e) {
    if (isNotFound(e)) return 0;
    throw e;
  }
}

/** Hands `msgs` (in stream order) up to `endSeq` to the handler as the consumer path does; returns the last sequence. */
async function deliver(
  msgs: readonly Msg[],
  endSeq: number,
  onEvent: (e: StoredEvent) => void | Promise<void>,
  onUndecodable?: (u: Undecodable) => void | Promise<void>,
): Promise<number> {
  let last = 0;
  for (const m of msgs) {
    if (m.seq > endSeq) break;
    let e: StoredEvent | undefined;
    try {
      e = toStoredEvent(m);
    } catch (err) {
      if (!onUndecodable) throw err;
      await onUndecodable({ seq: m.seq, subject: m.subject, error: err instanceof Error ? err.message : String(err) });
    }
    if (e) await onEvent(e);
    last = m.seq;
  }
  return last;
}
