import type { JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import { decodeEvent, decodeEventWithoutPayload, type DagMemo } from "../contracts/index.ts";
import { isNotFound, toStoreError } from "./nats-errors.ts";
import type { StoredEvent, Undecodable } from "./types.ts";

/**
 * Decodes a stored message; an invalid one raises `contract-violation` naming its stream sequence (never skipped).
 * With `dags`, a submission's DAG is checked through that memo (contracts `DagMemo`: the same verdict, a DAG seen before not parsed again).
 */
export function toStoredEvent(m: Pick<StoredMsg, "seq" | "subject" | "time" | "data">, dags?: DagMemo): StoredEvent {
  return {
    seq: m.seq,
    subject: m.subject,
    time: m.time,
    event: decodeEvent(m.data, { seq: m.seq, subject: m.subject }, dags),
  };
}

/** How a read turns a stored message into an event (default `toStoredEvent`). */
export type Decode = (m: Pick<StoredMsg, "seq" | "subject" | "time" | "data">) => StoredEvent;

/**
 * `toStoredEvent`, except that a `run.submitted`'s DAG and input are not validated
 * (contracts `decodeEventWithoutPayload`): for a reader that keeps neither (recovery's reconcile).
 */
export const toStoredEventWithoutPayload: Decode = (m) => ({
  seq: m.seq,
  subject: m.subject,
  time: m.time,
  event: decodeEventWithoutPayload(m.data, { seq: m.seq, subject: m.subject }),
});

// One direct-get batch: large enough that most aggregates are one round trip, small enough to stay
// far under the server's per-request byte cap.
const BATCH = 1024;

/**
 * Every event on `filter` from stream sequence `fromSeq` on, in stream order, via batched Direct Get
 * (`next_by_subj`, ADR-31): one request per 1024 events instead of creating and tearing down a
 * consumer. The result is a contiguous prefix of the filter's history as of the reads; Direct Get
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
 * The messages on `filter` from `fromSeq` through `toSeq` (default: the end), undecoded, in stream
 * order, by batched Direct Gets: one request per BATCH messages, the next from where one stopped
 * while `pending` says more match (a batch may also end early on the server's byte cap). With
 * `max`, at most that many: the first `max` of them.
 */
export async function readRaw(
  jsm: JetStreamManager,
  stream: string,
  filter: string,
  fromSeq = 1,
  toSeq = Number.POSITIVE_INFINITY,
  max = Number.POSITIVE_INFINITY,
): Promise<StoredMsg[]> {
  const out: StoredMsg[] = [];
  let more = true;
  for (let seq = Math.max(1, fromSeq); more && seq <= toSeq && out.length < max;) {
    more = false;
    try {
      const batch = Math.min(BATCH, toSeq - seq + 1, max - out.length);
      for await (const m of await jsm.direct.getBatch(stream, { seq, next_by_subj: filter, batch })) {
        if (m.seq > toSeq) {
          more = false;
          break;
        }
        out.push(m);
        more = m.pending > 0; // the matching messages after this one
        seq = m.seq + 1;
      }
    } catch (e) {
      if (isNotFound(e)) break;
      throw toStoreError(e, `reading ${filter} from ${stream}`, { filter, fromSeq: seq });
    }
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
