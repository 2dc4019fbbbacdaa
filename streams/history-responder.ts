import type { JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import type { StreamLayout } from "./layout.ts";
import { directBatches } from "./stored.ts";
import {
  encodePage,
  historyFilterOf,
  historyPrefixOf,
  historyTargetOf,
  parseHistoryRequest,
  type HistoryError,
  type PagedMsg,
} from "./history-page.ts";

/** Every responder of one layout answers in this queue group: one answer per request, any replica. */
export const HISTORY_QUEUE = "drover-history";

/** Room left under the max payload for the page header's fixed part and rounding. */
const SLACK_BYTES = 1024;
/** Messages asked of JetStream per direct-get batch while filling a page. */
const BATCH = 256;

export interface HistoryResponderOptions {
  readonly log?: (fields: Record<string, unknown>, msg: string) => void;
  /** Page budget in bytes (default: the server's max payload); tests lower it to prove paging. */
  readonly maxPageBytes?: number;
}

/**
 * Answers runtimes' history requests (history-page.ts) on `<prefix>-read.<exec|run>.<tenant>.<id>`:
 * reads the aggregate the subject names — never anything the body names — with batched Direct Gets
 * (this connection's rights read the whole stream) and answers one page per request, at most the
 * max payload. A runtime's NATS rights limit which request subjects it may publish (its tenants'),
 * so it reads its tenants' exec and run histories without any consumer or `$JS.API` right of its
 * own (docs/nats-identities.md). Hosted by the provisioner (every replica, one queue group).
 */
export function startHistoryResponder(
  nc: NatsConnection,
  jsm: JetStreamManager,
  layout: StreamLayout,
  o: HistoryResponderOptions = {},
): Subscription {
  const budget = (o.maxPageBytes ?? nc.info?.max_payload ?? 1024 * 1024) - SLACK_BYTES;
  const answer = async (m: Msg): Promise<Uint8Array> => {
    const target = historyTargetOf(layout, m.subject);
    const req = parseHistoryRequest(m.data);
    if (!target || !req)
      return failed({ code: "bad-request", message: `not a history request: ${m.subject} ${m.string().slice(0, 80)}` });
    const filter = historyFilterOf(layout, target);
    try {
      return await readPage(jsm, layout.eventStream, filter, req.from, req.max ?? Number.MAX_SAFE_INTEGER, budget);
    } catch (e) {
      o.log?.({ filter, from: req.from, err: String(e) }, "history read failed");
      return failed({ code: "unavailable", message: `reading ${filter}: ${(e as Error)?.message ?? String(e)}` });
    }
  };
  return nc.subscribe(`${historyPrefixOf(layout)}.*.*.*`, {
    queue: HISTORY_QUEUE,
    callback: (err, m) => {
      if (err || !m.reply) return;
      answer(m).then(
        (page) => m.respond(page),
        (e: unknown) => o.log?.({ subject: m.subject, err: String(e) }, "history answer failed"),
      );
    },
  });
}

const failed = (error: HistoryError) => encodePage({ error });

/** Bytes one message adds to a page: its data and its header entry (history-page.ts). */
const entryBytes = (m: PagedMsg) =>
  m.data.length + JSON.stringify({ s: m.seq, j: m.subject, t: m.time, n: m.data.length }).length + 1;

async function readPage(
  jsm: JetStreamManager,
  stream: string,
  filter: string,
  from: number,
  max: number,
  budget: number,
): Promise<Uint8Array> {
  const msgs: PagedMsg[] = [];
  let bytes = 0;
  let last: StoredMsg | undefined;
  for await (const s of directBatches(jsm, stream, filter, { fromSeq: from, max, batch: BATCH })) {
    const m: PagedMsg = { seq: s.seq, subject: s.subject, time: s.time.toISOString(), data: s.data };
    if (bytes + entryBytes(m) > budget) {
      if (msgs.length === 0)
        return failed({ code: "too-large", message: `message ${s.seq} on ${filter} does not fit one page` });
      return encodePage({ msgs, more: true });
    }
    msgs.push(m);
    bytes += entryBytes(m);
    last = s;
  }
  return encodePage({ msgs, more: (last?.pending ?? 0) > 0 });
}
