import type { JetStreamManager } from "@nats-io/jetstream";
import { isNotFound, toStoreError } from "./nats-errors.ts";
import type { Reader } from "./scoped-read.ts";
import { toStoredEvent, type Decode } from "./stored.ts";
import type { StoredEvent, Undecodable } from "./types.ts";

/**
 * Read-your-writes for one event store. On an R>1 stream a Direct Get may be answered by a replica
 * that has not applied the last writes yet (nats-server 2.15 has no `min_last_seq` for reads), so a
 * read right after this store's own append could miss it: after a leader change this was seen in
 * CI (`nats-cluster.int`). The store remembers the last sequence it wrote per aggregate (bounded,
 * the most recently written first to stay) and a read that ends before it fetches the missing
 * tail again: a few more Direct Gets (any replica, usually caught up by then), then from the
 * stream leader one message at a time (`$JS.API.STREAM.MSG.GET`, leader only; not for
 * subject-scoped readers, whose identity may not send it). Another client's
 * writes are covered only where the reader names a sequence it knows is there (`atLeast`: a
 * delivered event's); readers elsewhere rely on conditional appends (a stale read can only end
 * in a version conflict, never lose an update; docs/decisions.md "Clustered JetStream").
 */
export interface ReadFloor {
  /** Records that this store wrote `seq` on `filter`. */
  wrote(filter: string, seq: number): void;
  /** `events` read on `filter`, completed up to what this store wrote there (and `atLeast`: a sequence the caller knows is there). */
  complete(
    filter: string,
    events: StoredEvent[],
    lastSeen: number,
    onUndecodable?: (u: Undecodable) => void,
    decode?: Decode,
    atLeast?: number,
  ): Promise<StoredEvent[]>;
}

const MAX_AGGREGATES = 4096;
const DIRECT_RETRIES = 4;

/** `jsm` undefined: no leader reads (an identity limited to subject-scoped reads may not send them). */
export function readFloor(reader: Reader, jsm: Promise<JetStreamManager> | undefined, stream: string): ReadFloor {
  const floors = new Map<string, number>();
  const push = (
    out: StoredEvent[],
    m: Parameters<typeof toStoredEvent>[0],
    onBad: ((u: Undecodable) => void) | undefined,
    decode: Decode,
  ) => {
    try {
      out.push(decode(m));
    } catch (e) {
      if (!onBad) throw e;
      onBad({ seq: m.seq, subject: m.subject, error: e instanceof Error ? e.message : String(e) });
    }
  };
  /** The tail from the stream leader, one message per request (rare: only after a lagging replica answered). */
  const fromLeader = async (
    filter: string,
    fromSeq: number,
    floor: number,
    onBad: ((u: Undecodable) => void) | undefined,
    decode: Decode,
  ) => {
    const out: StoredEvent[] = [];
    for (let seq = fromSeq; seq <= floor;) {
      let m;
      try {
        // The server's STREAM.MSG.GET takes `next_by_subj`; the client's type names only seq or last_by_subj.
        const query = { seq, next_by_subj: filter };
        m = await (await jsm!).streams.getMessage(stream, query);
      } catch (e) {
        if (isNotFound(e)) break;
        throw toStoreError(e, `reading ${filter} from the leader of ${stream}`, { filter, seq });
      }
      if (!m) break;
      push(out, m, onBad, decode);
      seq = m.seq + 1;
    }
    return out;
  };
  return {
    wrote(filter, seq) {
      const had = floors.get(filter);
      floors.delete(filter);
      floors.set(filter, Math.max(had ?? 0, seq));
      if (floors.size > MAX_AGGREGATES) floors.delete(floors.keys().next().value!);
    },
    async complete(filter, events, lastSeen, onBad, decode = toStoredEvent, atLeast = 0) {
      const floor = Math.max(floors.get(filter) ?? 0, atLeast);
      let last = lastSeen;
      for (let attempt = 0; last < floor && attempt < DIRECT_RETRIES; attempt++) {
        if (attempt > 0) await new Promise((r) => setTimeout(r, 10 * attempt));
        const bad: Undecodable[] = [];
        const more = await reader.filtered(filter, last + 1, onBad ? (u) => bad.push(u) : undefined, decode);
        for (const u of bad) onBad!(u);
        events.push(...more);
        last = Math.max(last, more.at(-1)?.seq ?? 0, bad.at(-1)?.seq ?? 0);
      }
      if (last < floor && jsm) events.push(...(await fromLeader(filter, last + 1, floor, onBad, decode)));
      return events;
    },
  };
}
