import type { JetStreamManager } from "@nats-io/jetstream";
import type { StreamLayout } from "./layout.ts";
import { isNotFound } from "./nats-errors.ts";

/** One message a consumer gave up on, as recorded by the server's advisory in the dead-letter stream. */
export interface DeadLetter {
  /** Sequence of the record in the dead-letter stream. */
  readonly seq: number;
  readonly kind: "max-deliveries" | "terminated";
  readonly stream: string;
  readonly consumer: string;
  /** Sequence of the failed event in the event stream (it is never deleted there). */
  readonly streamSeq: number;
  readonly deliveries: number;
  /** The term reason (`<code>: <message>` from the consumer runner), when terminated. */
  readonly reason?: string;
  readonly at: string;
}

interface Advisory {
  type?: string;
  stream?: string;
  consumer?: string;
  stream_seq?: number;
  deliveries?: number;
  reason?: string;
  timestamp?: string;
}

/** Parses a JetStream give-up advisory; undefined for anything else. */
export function parseDeadLetter(seq: number, body: Advisory): DeadLetter | undefined {
  const kind =
    body.type === "io.nats.jetstream.advisory.v1.max_deliver"
      ? "max-deliveries"
      : body.type === "io.nats.jetstream.advisory.v1.terminated"
        ? "terminated"
        : undefined;
  if (!kind || body.stream === undefined || body.consumer === undefined || body.stream_seq === undefined)
    return undefined;
  return {
    seq,
    kind,
    stream: body.stream,
    consumer: body.consumer,
    streamSeq: body.stream_seq,
    deliveries: body.deliveries ?? 0,
    ...(body.reason ? { reason: body.reason } : {}),
    at: body.timestamp ?? "",
  };
}

/** Dead letters recorded for `layout`'s event stream from dead-letter sequence `fromSeq` on, oldest first. */
export async function readDeadLetters(jsm: JetStreamManager, layout: StreamLayout, fromSeq = 1): Promise<DeadLetter[]> {
  const out: DeadLetter[] = [];
  for (let seq = Math.max(1, fromSeq); ;) {
    let last: { seq: number; pending: number } | undefined;
    try {
      const iter = await jsm.direct.getBatch(layout.deadLetterStream, { seq, batch: 1024 });
      for await (const m of iter) {
        const d = parseDeadLetter(m.seq, m.json<Advisory>());
        if (d) out.push(d);
        last = { seq: m.seq, pending: m.pending };
      }
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    if (!last || last.pending === 0) break;
    seq = last.seq + 1;
  }
  return out;
}
