import { DroverError, type DroverEvent } from "../contracts/index.ts";
import type { NatsHandle } from "./connection.ts";
import type { StreamLayout } from "./layout.ts";
import { defaultMsgId, nthMsgId } from "./msg-ids.ts";
import { JS, jsCode, toStoreError } from "./nats-errors.ts";
import { appendAtomic } from "./atomic-append.ts";
import { replay } from "./replay.ts";
import { assertServerVersion } from "./server-version.ts";
import { encodeFor, storeContext, type Encoded, type EventStoreOptions, type StoreContext } from "./store-context.ts";
import { landedEarlier, versionConflict } from "./occ.ts";
import { readFloor } from "./read-floor.ts";
import { toStoredEvent, toStoredEventWithoutPayload } from "./stored.ts";
import { aggregateWildcard, eventSubject, type AggregateRef } from "./subjects.ts";
import type { Appended, AppendOptions, EventStore, Undecodable } from "./types.ts";

export type { EventStoreOptions } from "./store-context.ts";

/**
 * The event store over JetStream (see the EventStore interface for the contract). Refuses a
 * server older than 2.12 at construction (`server-version-unsupported`), since atomic batches and
 * wildcard expectations would silently degrade there. Synchronous: no request is made until the
 * first operation.
 */
export function createEventStore(handle: NatsHandle, layout: StreamLayout, opts: EventStoreOptions = {}): EventStore {
  const ctx = storeContext(handle, layout, opts);
  assertServerVersion(ctx.nc.info?.version);
  const floor = readFloor(ctx.reader, opts.subjectScopedReads ? undefined : ctx.jsm, layout.eventStream);
  const wrote = (ref: AggregateRef, appended: readonly Appended[]) => {
    const last = appended.at(-1);
    if (last) floor.wrote(aggregateWildcard(layout, ref), last.seq);
  };
  return {
    // async wrappers so validation failures reject the promise rather than throw synchronously.
    append: async (ref, event, o) => {
      const enc = encodeFor(layout, ref, event);
      const a = await appendOne(ctx, ref, enc, o.expectedSeq, o.msgId ?? defaultMsgId(layout, ref, o.expectedSeq));
      wrote(ref, [a]);
      return a;
    },
    appendAll: async (ref, events, o) => {
      const appended = await appendAll(ctx, ref, events, o);
      wrote(ref, appended);
      return appended;
    },
    appendAtomic: async (entries) => {
      const appended = await appendAtomic(ctx, entries);
      let at = 0;
      for (const e of entries) wrote(e.ref, appended.slice(at, (at += e.events.length)));
      return appended;
    },
    read: async (ref, o) => {
      const undecodable: Undecodable[] = [];
      const wildcard = aggregateWildcard(layout, ref);
      const onBad = o?.skipUndecodable ? (u: Undecodable) => undecodable.push(u) : undefined;
      const decode = o?.withoutPayload ? toStoredEventWithoutPayload : toStoredEvent;
      const read = await ctx.reader.filtered(wildcard, 1, onBad, decode);
      const seen = Math.max(read.at(-1)?.seq ?? 0, undecodable.at(-1)?.seq ?? 0);
      const events = await floor.complete(wildcard, read, seen, onBad, decode, o?.atLeastSeq);
      const lastSeq = Math.max(events.at(-1)?.seq ?? 0, undecodable.at(-1)?.seq ?? 0);
      return o?.skipUndecodable ? { events, lastSeq, undecodable } : { events, lastSeq };
    },
    lastSeq: (ref) => lastSeq(ctx, ref),
    lastOfType: async (ref, type) => {
      const subject = eventSubject(layout, ref, type);
      try {
        const m = await ctx.reader.last(subject);
        return m ? toStoredEvent(m) : undefined;
      } catch (e) {
        throw toStoreError(e, `reading the last message on ${subject}`, { subject });
      }
    },
    replay: (from, onEvent, o) => replay(ctx, from, onEvent, o),
  };
}

/** The aggregate's last sequence (from the stream leader unless reads are subject-scoped: scoped-read.ts). */
async function lastSeq(ctx: StoreContext, ref: AggregateRef): Promise<number> {
  const wildcard = aggregateWildcard(ctx.layout, ref);
  try {
    return await ctx.reader.lastSeq(wildcard);
  } catch (e) {
    throw toStoreError(e, `reading the last sequence of ${wildcard}`, { subject: wildcard });
  }
}

/** Publishes refused with 10164/10158 while the expectation still holds, before it counts as a conflict (~1 s in all). */
const IN_FLIGHT_RETRIES = 20;
const IN_FLIGHT = new Set<number | undefined>([JS.wrongLastSequenceConstant, JS.msgIdInProcess]);

async function appendOne(
  ctx: StoreContext,
  ref: AggregateRef,
  enc: Encoded,
  expectedSeq: number,
  msgId: string,
): Promise<Appended> {
  const wildcard = aggregateWildcard(ctx.layout, ref);
  let pa;
  for (let attempt = 1; ; attempt++) {
    try {
      const send = () =>
        ctx.publish(enc.subject, enc.data, {
          msgID: msgId,
          timeout: ctx.timeoutMs,
          expect: {
            streamName: ctx.layout.eventStream,
            lastSubjectSequence: expectedSeq,
            lastSubjectSequenceSubject: wildcard,
          },
        });
      pa = await (attempt === 1 ? ctx.gate(send) : send());
      break;
    } catch (e) {
      const code = jsCode(e);
      if (code !== JS.wrongLastSequence && !IN_FLIGHT.has(code))
        throw toStoreError(e, `appending to ${wildcard}`, { subject: wildcard, expectedSeq, msgId });
      const seq = await landedEarlier(ctx, ref, expectedSeq, enc.eventId);
      if (seq !== undefined) return { seq, duplicate: true };
      // A clustered stream's leader refuses an expectation on a subject with a write still in flight
      // in its Raft group (10164, no number), even one that holds, and a msg id still in flight
      // (10158). Re-read: the aggregate moved → conflict; else the write ahead is still being
      // applied: publish again, a bounded number of times (docs/decisions.md "Clustered JetStream").
      if (code === JS.wrongLastSequence || attempt >= IN_FLIGHT_RETRIES || (await lastSeq(ctx, ref)) !== expectedSeq)
        throw versionConflict(ctx, ref, expectedSeq, e);
      await new Promise((r) => setTimeout(r, 5 * attempt));
    }
  }
  if (!pa.duplicate) return { seq: pa.seq, duplicate: false };
  // A duplicate ack names whatever message holds this msg id; it is ours only if it is our event.
  // Read as the first message of this aggregate at or after it: a message of another subject there
  // is not on this aggregate (and a reader limited by subject could not read it anyway).
  const first = await ctx.reader.first(wildcard, pa.seq).catch(() => null);
  const stored = first?.seq === pa.seq ? first : null;
  if (stored && stored.subject === enc.subject && toStoredEvent(stored).event.eventId === enc.eventId)
    return { seq: pa.seq, duplicate: true };
  // Another decision on this aggregate holds the id (servers that dedupe before checking the expectation).
  if (stored) throw versionConflict(ctx, ref, expectedSeq, undefined, { actualSeq: pa.seq, msgId });
  throw new DroverError(
    "contract-violation",
    `msg id ${msgId} already names another message (stream sequence ${pa.seq}); a msg id must identify one decision on one aggregate`,
    { details: { msgId, seq: pa.seq, subject: wildcard } },
  );
}

async function appendAll(
  ctx: StoreContext,
  ref: AggregateRef,
  events: readonly DroverEvent[],
  o: AppendOptions,
): Promise<Appended[]> {
  // Validate every event before the first byte goes out.
  const encoded = events.map((e) => encodeFor(ctx.layout, ref, e));
  const base = o.msgId ?? defaultMsgId(ctx.layout, ref, o.expectedSeq);
  const out: Appended[] = [];
  let expected = o.expectedSeq;
  for (const [i, enc] of encoded.entries()) {
    try {
      const a = await appendOne(ctx, ref, enc, expected, nthMsgId(base, i));
      out.push(a);
      expected = a.seq;
    } catch (e) {
      // Tell the caller how far it got: earlier events are stored (appendAll is not atomic).
      if (!(e instanceof DroverError)) throw e;
      throw new DroverError(e.code, e.message, {
        cause: e.cause,
        retryable: e.retryable,
        details: { ...e.details, appended: out, failedIndex: i },
      });
    }
  }
  return out;
}
