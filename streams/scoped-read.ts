import type { JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { contractViolation, DroverError } from "../contracts/index.ts";
import { decodePage, historySubjectOf, type HistoryPage, type PagedMsg } from "./history-page.ts";
import type { StreamLayout } from "./layout.ts";
import { isNotFound, isTransportFailure, toStoreError } from "./nats-errors.ts";
import { firstAtOrAfter, readFiltered, readRaw, toStoredEvent, type Decode } from "./stored.ts";
import type { StoredEvent, Undecodable } from "./types.ts";

/**
 * How the event store reads one filter: every event from a sequence on, and the first message at
 * or after a sequence. Two implementations with the same results:
 *
 * - `directReader`: batched Direct Gets (`next_by_subj`), one round trip per 1024 events. The
 *   filter is in the request body, which NATS permissions cannot see: for identities that may read
 *   the whole stream (the services).
 * - `scopedReader`: only requests whose subject names what is read, so a permission on the subject
 *   limits what can be read: the subject-form Direct Get (`$JS.API.DIRECT.GET.<stream>.<filter>`,
 *   the last message on the filter; nats-server refuses a body naming a sequence or another
 *   filter there) and the history responder's `<prefix>-read.<exec|run>.<tenant>.<id>`
 *   (history-responder.ts), which reads the aggregate its subject names. No consumer: what a
 *   runtime uses, whose rights hold no `$JS.API` consumer subject (docs/nats-identities.md).
 */
export interface Reader {
  /** `decode`: how each message becomes an event (default `toStoredEvent`). */
  filtered(
    filter: string,
    fromSeq: number,
    onUndecodable?: (u: Undecodable) => void,
    decode?: Decode,
  ): Promise<StoredEvent[]>;
  first(filter: string, seq: number): Promise<Msg | null>;
  /** Sequence of the last message on `filter` (0 when none). */
  lastSeq(filter: string): Promise<number>;
  /** The last message on `filter` (null when none). */
  last(filter: string): Promise<Msg | null>;
  /**
   * Every message on `filter` from `fromSeq` through `toSeq` (at most `max` of them: the first), undecoded,
   * in stream order, by batched Direct Gets (one round trip unless the server caps a batch's bytes).
   * Only where a body-form Direct Get is allowed: the direct reader.
   */
  range?(filter: string, fromSeq: number, toSeq: number, max?: number): Promise<Msg[]>;
}

/** A stored message, undecoded. */
export type Msg = Pick<StoredMsg, "seq" | "subject" | "time" | "data">;

export const directReader = (jsm: Promise<JetStreamManager>, stream: string): Reader => {
  // From the stream leader (read-after-write, unlike Direct Get on R>1); the filter is in the body.
  const last = async (filter: string) => (await jsm).streams.getMessage(stream, { last_by_subj: filter });
  return {
    filtered: async (filter, fromSeq, onUndecodable, decode) =>
      readFiltered(await jsm, stream, filter, fromSeq, onUndecodable, decode),
    first: async (filter, seq) => firstAtOrAfter(await jsm, stream, filter, seq),
    lastSeq: async (filter) => (await last(filter))?.seq ?? 0,
    last,
    range: async (filter, fromSeq, toSeq, max) => readRaw(await jsm, stream, filter, fromSeq, toSeq, max),
  };
};

/** Delays before the 2nd..5th attempt of a history request nobody answered (~3.7 s of waiting in all). */
const RETRY_DELAYS_MS = [200, 500, 1000, 2000];

/**
 * Reads for an identity that may not create consumers (a runtime's): the last sequence by the
 * subject-form Direct Get, and an aggregate's messages from the history responder
 * (history-responder.ts), one page per request on a subject naming the aggregate. A request
 * nobody answers (no responder, a timeout, a responder that could not read) is tried again
 * `RETRY_DELAYS_MS` apart, then fails with `event-store-unavailable` naming the subject; a refused
 * one (permissions, a malformed request) fails at once.
 */
export function scopedReader(
  nc: NatsConnection,
  jsm: Promise<JetStreamManager>,
  layout: StreamLayout,
  timeoutMs: number,
  retryDelaysMs: readonly number[] = RETRY_DELAYS_MS,
): Reader {
  const stream = layout.eventStream;
  const last = async (filter: string): Promise<StoredMsg | null> => {
    try {
      return await (await jsm).direct.getMessage(stream, { last_by_subj: filter });
    } catch (e) {
      if (isNotFound(e)) return null;
      throw toStoreError(e, `reading the last message on ${filter} from ${stream}`, { filter });
    }
  };
  const subjectOf = (filter: string): string => {
    const s = historySubjectOf(layout, filter);
    if (!s) throw contractViolation(`history filter ${filter}`, "is not one exec or run aggregate");
    return s;
  };
  /** One page from `from` on, tried again while nobody answers. */
  const page = async (subject: string, from: number, max?: number): Promise<HistoryPage> => {
    const body = JSON.stringify(max === undefined ? { from } : { from, max });
    for (let attempt = 0; ; attempt++) {
      let why: string;
      try {
        const p = decodePage((await nc.request(subject, body, { timeout: timeoutMs })).data);
        if (!("error" in p)) return p;
        if (p.error.code !== "unavailable")
          throw new DroverError("event-store-unavailable", `history of ${subject}: ${p.error.message}`, {
            retryable: false,
            details: { subject, from, code: p.error.code },
          });
        why = p.error.message;
      } catch (e) {
        if (!isTransportFailure(e)) throw toStoreError(e, `reading the history of ${subject}`, { subject, from });
        why = (e as Error).message;
      }
      const wait = retryDelaysMs[attempt];
      if (wait === undefined)
        throw new DroverError(
          "event-store-unavailable",
          `no history responder answered ${subject} after ${attempt + 1} attempts (${why}); the provisioner serves runtimes' reads (docs/nats-identities.md)`,
          { details: { subject, from, attempts: attempt + 1 } },
        );
      await new Promise((r) => setTimeout(r, wait));
    }
  };
  return {
    // Direct Get may be answered by a lagging replica on R>1: an append relying on it can only
    // fail with a version conflict, never lose an update.
    lastSeq: async (filter) => (await last(filter))?.seq ?? 0,
    last,
    filtered: async (filter, fromSeq, onUndecodable, decode = toStoredEvent) => {
      const subject = subjectOf(filter);
      const out: StoredEvent[] = [];
      for (let from = Math.max(1, fromSeq); ;) {
        const p = await page(subject, from);
        for (const m of p.msgs) {
          try {
            out.push(decode(toMsg(m)));
          } catch (e) {
            if (!onUndecodable) throw e;
            onUndecodable({ seq: m.seq, subject: m.subject, error: e instanceof Error ? e.message : String(e) });
          }
        }
        const end = p.msgs.at(-1);
        if (!p.more) return out;
        if (!end) throw new DroverError("event-store-unavailable", `history of ${subject}: an empty page with more`);
        from = end.seq + 1;
      }
    },
    first: async (filter, seq) => {
      const m = (await page(subjectOf(filter), Math.max(1, seq), 1)).msgs[0];
      return m ? toMsg(m) : null;
    },
  };
}

const toMsg = (m: PagedMsg): Msg => ({ seq: m.seq, subject: m.subject, time: new Date(m.time), data: m.data });
