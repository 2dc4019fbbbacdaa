import { jetstreamManager } from "@nats-io/jetstream";
import { type NatsConnection } from "@nats-io/transport-node";
import { decodeEvent } from "../../contracts/index.ts";
import { readArchived } from "../../platform/archive-store.ts";
import { connectNats } from "../../platform/nats-connect.ts";
import type { RecordedEvent } from "../../aggregates/replay-validation.ts";
import {
  createEventStore,
  DEFAULT_LAYOUT,
  taggedLayout,
  type EventStore,
  type StreamLayout,
} from "../../streams/index.ts";

/** The event stream as the CLI reads it: read-only, straight from JetStream. */
export interface StreamSource {
  readonly layout: StreamLayout;
  /** Every event matching `filter` (non-overlapping subject filters) from `fromSeq` on, in stream order. */
  collect(filter: string | readonly string[], fromSeq?: number): Promise<RecordedEvent[]>;
  /** How many of the events collected so far came from the archive of compacted runs (docs/retention.md). */
  fromArchive(): number;
  close(): Promise<void>;
}

/**
 * Connects to NATS_URL (default nats://127.0.0.1:4222) and reads the stream of the default layout,
 * or of `taggedLayout(DROVER_STREAM_TAG)` when set (tests). Rejects when the server cannot be
 * reached or is older than 2.12 (the event store refuses it); an event that does not decode stops a
 * read with `contract-violation` naming its sequence — replay never skips evidence silently.
 * A compacted run's events are read from the archive, under their original sequences, merged with
 * what the live stream still holds: a replay of a compacted run is the same replay.
 */
export async function openStreamSource(env: Readonly<Record<string, string | undefined>>): Promise<StreamSource> {
  const layout = env.DROVER_STREAM_TAG ? taggedLayout(env.DROVER_STREAM_TAG) : DEFAULT_LAYOUT;
  const servers = env.NATS_URL ?? "nats://127.0.0.1:4222";
  let nc: NatsConnection;
  try {
    nc = await connectNats({ servers, creds: env.NATS_CREDS ?? "", timeout: 5_000, maxReconnectAttempts: 1 });
  } catch (e) {
    throw new Error(`cannot reach NATS at ${servers}: ${(e as Error).message}`, { cause: e });
  }
  const store: EventStore = createEventStore(nc, layout);
  const jsm = await jetstreamManager(nc);
  let archived = 0;
  return {
    layout,
    async collect(filter, fromSeq = 1) {
      const out: RecordedEvent[] = [];
      const filters = typeof filter === "string" ? [filter] : [...filter];
      if (filters.length === 0) return out;
      await store.replay(
        { seq: fromSeq },
        (e) => {
          out.push({ seq: e.seq, subject: e.subject, event: e.event });
        },
        { filter: filters },
      );
      const old: RecordedEvent[] = [];
      for (const f of filters)
        for (const a of await readArchived(jsm, layout, f))
          if (a.origSeq >= fromSeq)
            old.push({
              seq: a.origSeq,
              subject: a.subject,
              event: decodeEvent(a.data, { seq: a.origSeq, subject: a.subject }),
            });
      archived += old.length;
      return old.length === 0 ? out : mergeLogs(out, old);
    },
    fromArchive: () => archived,
    close: () => nc.close(),
  };
}

/** Union of logs by stream sequence, in stream order. */
export function mergeLogs(...logs: readonly (readonly RecordedEvent[])[]): RecordedEvent[] {
  const bySeq = new Map<number, RecordedEvent>();
  for (const log of logs) for (const r of log) bySeq.set(r.seq, r);
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}
