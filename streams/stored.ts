import type { JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import { decodeEvent, decodeEventWithoutPayload, type DagMemo } from "../contracts/index.ts";
import { isNotFound, toStoreError } from "./nats-errors.ts";
import type { StoredEvent, Undecodable } from "./types.ts";

/** A stored message as any read hands it over: a consumer's (JsMsg), a Direct Get's, a history page's. */
export type StoredMsgLike = Pick<StoredMsg, "seq" | "subject" | "time" | "data"> & {
  /** A consumer's message (JsMsg): the stored time in nanoseconds, exact. */
  readonly timestampNanos?: bigint;
};

/**
 * When the message was stored, to the millisecond (cut, not rounded), the same whichever way it was
 * read. A consumer's message (JsMsg) carries the server's nanoseconds, and its `time` parses them into
 * a double first (`parseInt` of 19 digits: 256 ns apart at today's dates), so a time within ~128 ns
 * of the next millisecond read one millisecond later than the same message by Direct Get (an RFC 3339
 * header, cut to the millisecond): 16 of 100 000 messages on a real nats-server. The forensics ledger's
 * `storedAt` then depended on whether a build read the event through its replay's Direct Get head or
 * through a consumer, and a resumed build or a rebuild differed from a live build
 * (test/int/forensics-projector.int.test.ts, streams/stored.unit.test.ts). From the exact nanoseconds here.
 */
export function storedTime(m: StoredMsgLike): Date {
  const nanos = m.timestampNanos;
  return typeof nanos === "bigint" ? new Date(Number(nanos / 1_000_000n)) : m.time;
}

/**
 * Decodes a stored message; an invalid one raises `contract-violation` naming its stream sequence (never skipped).
 * With `dags`, a submission's DAG is checked through that memo (contracts `DagMemo`: the same verdict, a DAG seen before not parsed again).
 */
export function toStoredEvent(m: StoredMsgLike, dags?: DagMemo): StoredEvent {
  return {
    seq: m.seq,
    subject: m.subject,
    time: storedTime(m),
    event: decodeEvent(m.data, { seq: m.seq, subject: m.subject }, dags),
  };
}

/** How a read turns a stored message into an event (default `toStoredEvent`). */
export type Decode = (m: StoredMsgLike) => StoredEvent;

/**
 * `toStoredEvent`, except that a `run.submitted`'s DAG and input are not validated
 * (contracts `decodeEventWithoutPayload`): for a reader that keeps neither (recovery's reconcile).
 */
export const toStoredEventWithoutPayload: Decode = (m) => ({
  seq: m.seq,
  subject: m.subject,
  time: storedTime(m),
  event: decodeEventWithoutPayload(m.data, { seq: m.seq, subject: m.subject }),
});

// The largest direct-get batch: small enough to stay far under the server's per-request byte cap.
const BATCH = 1024;

/**
 * Every event on `filter` from stream sequence `fromSeq` on, in stream order, via batched Direct Get
 * (`next_by_subj`, ADR-31; readRaw): one request for an aggregate of one event, two for more, and one
 * more per 1024 events, instead of creating and tearing down a consumer. The result is a contiguous prefix of the filter's history as of the reads; Direct Get
 * may be answered by a lagging replica on R>1 streams, which can only make it shorter, never
 * reorder it, so an append that relies on it fails with a version conflict rather than losing an update.
 * An undecodable message raises `contract-violation`, unless `onUndecodable` is given: then it is
 * reported there and left out. `decode`: how each message becomes an event.
 */
export async function readFiltered(
  jsm: JetStreamManager,
  stream: string,
  filter: string,
  fromSeq = 1,
  onUndecodable?: (u: Undecodable) => void,
  decode: Decode = toStoredEvent,
): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  for (const m of await readRaw(jsm, stream, filter, fromSeq)) {
    if (!onUndecodable) {
      out.push(decode(m));
      continue;
    }
    try {
      out.push(decode(m));
    } catch (e) {
      onUndecodable({ seq: m.seq, subject: m.subject, error: e instanceof Error ? e.message : String(e) });
    }
  }
  return out;
}

/**
 * The messages on `filter` from `fromSeq` through `toSeq` (default: the end, as of the reads),
 * undecoded, in stream order, at most `max`, by batched Direct Gets that never ask for more than
 * match. The first request asks for one message, whose `pending` says how many more match; each
 * next one asks for exactly that many (at most `batch`, default BATCH, and the sequences left to `toSeq`) from
 * where the last stopped, while `pending` says more match (a batch may also end early on the
 * server's byte cap). nats-server keeps looking for the rest of a batch after the last match,
 * through every later message block once the stream holds more than 64 Ki subjects: reading a
 * 5-event run with one 1024-batch cost it 10.8 ms of CPU in a stream of 12 000 runs, against
 * 0.85 ms this way (bench/direct-get-tail.bench.ts). The caller may stop iterating at any time.
 */
export async function* directBatches(
  jsm: JetStreamManager,
  stream: string,
  filter: string,
  o: { fromSeq?: number; toSeq?: number; max?: number; batch?: number } = {},
): AsyncGenerator<StoredMsg> {
  const { fromSeq = 1, toSeq = Number.POSITIVE_INFINITY, max = Number.POSITIVE_INFINITY, batch: cap = BATCH } = o;
  let want = 1;
  let n = 0;
  for (let seq = Math.max(1, fromSeq); want > 0 && seq <= toSeq && n < max;) {
    const batch = Math.min(want, cap, toSeq - seq + 1, max - n);
    want = 0; // until a message says how many more match: a batch that brings none ends the read
    try {
      for await (const m of await jsm.direct.getBatch(stream, { seq, next_by_subj: filter, batch })) {
        if (m.seq > toSeq) return;
        n++;
        want = m.pending; // the matching messages after this one
        seq = m.seq + 1;
        yield m;
      }
    } catch (e) {
      // No (more) message on the filter: the end (a consumer stopping at a yield is a return, not caught).
      if (isNotFound(e)) return;
      throw e;
    }
  }
}

/** directBatches, collected; a failure names the filter and where the read stood. */
export async function readRaw(
  jsm: JetStreamManager,
  stream: string,
  filter: string,
  fromSeq = 1,
  toSeq = Number.POSITIVE_INFINITY,
  max = Number.POSITIVE_INFINITY,
): Promise<StoredMsg[]> {
  const out: StoredMsg[] = [];
  try {
    for await (const m of directBatches(jsm, stream, filter, { fromSeq, toSeq, max })) out.push(m);
  } catch (e) {
    throw toStoreError(e, `reading ${filter} from ${stream}`, {
      filter,
      fromSeq: (out.at(-1)?.seq ?? fromSeq - 1) + 1,
    });
  }
  return out;
}

/** The first message on `filter` at or after `seq`, undecoded; null when there is none. */
export async function firstAtOrAfter(
  jsm: JetStreamManager,
  stream: string,
  filter: string,
  seq: number,
): Promise<StoredMsg | null> {
  try {
    return await jsm.direct.getMessage(stream, { seq: Math.max(1, seq), next_by_subj: filter });
  } catch (e) {
    if (isNotFound(e)) return null;
    throw toStoreError(e, `reading ${filter} from ${stream}`, { filter, seq });
  }
}
