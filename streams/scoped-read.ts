import { DeliverPolicy, type JetStreamClient, type JetStreamManager, type StoredMsg } from "@nats-io/jetstream";
import { isNotFound, toStoreError } from "./nats-errors.ts";
import { firstAtOrAfter, readFiltered, toStoredEvent } from "./stored.ts";
import type { StoredEvent, Undecodable } from "./types.ts";

/**
 * How the event store reads one filter: every event from a sequence on, and the first message at
 * or after a sequence. Two implementations with the same results:
 *
 * - `directReader`: batched Direct Gets (`next_by_subj`), one round trip per 1024 events. The
 *   filter is in the request body, which NATS permissions cannot see: for identities that may read
 *   the whole stream (the services).
 * - `scopedReader`: only requests whose subject names the filter, so a permission on the subject
 *   limits what can be read: the subject-form Direct Get (`$JS.API.DIRECT.GET.<stream>.<filter>`,
 *   the last message on the filter; nats-server refuses a body naming a sequence or another
 *   filter there) and ordered consumers created with the filter in the subject
 *   (`$JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>`; the server refuses a body whose filter
 *   differs). A few more round trips; what a runtime uses (docs/nats-identities.md).
 */
export interface Reader {
  filtered(filter: string, fromSeq: number, onUndecodable?: (u: Undecodable) => void): Promise<StoredEvent[]>;
  first(filter: string, seq: number): Promise<Msg | null>;
  /** Sequence of the last message on `filter` (0 when none). */
  lastSeq(filter: string): Promise<number>;
}

/** A stored message, undecoded. */
export type Msg = Pick<StoredMsg, "seq" | "subject" | "time" | "data">;

export const directReader = (jsm: Promise<JetStreamManager>, stream: string): Reader => ({
  filtered: async (filter, fromSeq, onUndecodable) => readFiltered(await jsm, stream, filter, fromSeq, onUndecodable),
  first: async (filter, seq) => firstAtOrAfter(await jsm, stream, filter, seq),
  // From the stream leader (read-after-write, unlike Direct Get on R>1); the filter is in the body.
  lastSeq: async (filter) => (await (await jsm).streams.getMessage(stream, { last_by_subj: filter }))?.seq ?? 0,
});

export function scopedReader(js: JetStreamClient, jsm: Promise<JetStreamManager>, stream: string): Reader {
  const last = async (filter: string): Promise<StoredMsg | null> => {
    try {
      return await (await jsm).direct.getMessage(stream, { last_by_subj: filter });
    } catch (e) {
      if (isNotFound(e)) return null;
      throw toStoreError(e, `reading the last message on ${filter} from ${stream}`, { filter });
    }
  };
  /** Messages on `filter` from `fromSeq` up to `endSeq` (known to hold one), via an ordered consumer. */
  const walk = async (filter: string, fromSeq: number, endSeq: number, each: (m: Msg) => boolean) => {
    const oc = await js.consumers.get(stream, {
      filter_subjects: filter, // a string, not an array: the client puts it in the create subject
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: fromSeq,
    });
    const messages = await oc.consume({ max_messages: 256 });
    try {
      for await (const m of messages) {
        if (!each(m) || m.seq >= endSeq || m.info.pending === 0) break;
      }
    } finally {
      await messages.close();
      await oc.delete().catch(() => undefined);
    }
  };
  return {
    // Direct Get may be answered by a lagging replica on R>1: an append relying on it can only
    // fail with a version conflict, never lose an update.
    lastSeq: async (filter) => (await last(filter))?.seq ?? 0,
    filtered: async (filter, fromSeq, onUndecodable) => {
      const out: StoredEvent[] = [];
      const end = (await last(filter))?.seq ?? 0;
      if (end < Math.max(1, fromSeq)) return out;
      try {
        await walk(filter, Math.max(1, fromSeq), end, (m) => {
          try {
            out.push(toStoredEvent(m));
          } catch (e) {
            if (!onUndecodable) throw e;
            onUndecodable({ seq: m.seq, subject: m.subject, error: e instanceof Error ? e.message : String(e) });
          }
          return true;
        });
      } catch (e) {
        throw toStoreError(e, `reading ${filter} from ${stream}`, { filter, fromSeq });
      }
      return out;
    },
    first: async (filter, seq) => {
      const end = await last(filter);
      if (!end || end.seq < Math.max(1, seq)) return null;
      if (end.seq === seq) return end;
      let found: Msg | null = null;
      try {
        await walk(filter, Math.max(1, seq), end.seq, (m) => ((found = m), false));
      } catch (e) {
        throw toStoreError(e, `reading ${filter} from ${stream}`, { filter, seq });
      }
      return found;
    },
  };
}
