import { JetStreamApiError, type ApiError } from "@nats-io/jetstream";
import { nuid, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";
import { DroverError } from "../contracts/index.ts";

/** Server limit on messages per atomic batch (ADR-50; `streamMaxAtomicBatchSize`). */
export const MAX_ATOMIC_BATCH = 1000;

export interface BatchMessage {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly headers: MsgHdrs;
}

/** The commit acknowledgement: `seq` is the stream sequence of the batch's last message. */
export interface BatchCommitAck {
  readonly stream: string;
  readonly seq: number;
  readonly count: number;
}

function parseReply(data: Uint8Array): Record<string, unknown> | undefined {
  if (data.length === 0) return undefined; // a staged (not yet committed) message is acked with an empty body
  const r = JSON.parse(new TextDecoder().decode(data)) as Record<string, unknown> & { error?: ApiError };
  if (r.error) throw new JetStreamApiError(r.error);
  return r;
}

/**
 * Publishes `messages` as one JetStream atomic batch (ADR-50, nats-server >= 2.12, stream with
 * `allow_atomic`): the server stages them and, on the commit message, checks every message's
 * headers (expected sequences, msg ids) against the stream as it was before the batch, under lock,
 * then stores all of them contiguously or none.
 *
 * We speak the protocol directly instead of using `js.startBatch()`: @nats-io/jetstream 3.4.0's
 * `Batch.commit()` does not parse an error reply (a refused commit surfaces only as "batch didn't
 * contain number of published messages", losing the JetStream error code we map to
 * version-conflict), and `Batch.add()` ignores `expect` options. The first message is a request
 * (the server answers once it is staged, so a refused batch fails fast), the middle ones are
 * plain publishes on the same connection (ordered), the last is the commit request.
 *
 * Throws `JetStreamApiError` with the server's code when the batch is refused (nothing stored),
 * transport errors when the server does not answer (the batch may or may not be committed).
 */
export async function publishAtomicBatch(
  nc: NatsConnection,
  messages: readonly BatchMessage[],
  timeoutMs: number,
): Promise<BatchCommitAck> {
  if (messages.length === 0 || messages.length > MAX_ATOMIC_BATCH) {
    throw new DroverError(
      "batch-rejected",
      `an atomic batch holds 1..${MAX_ATOMIC_BATCH} messages, got ${messages.length}`,
      { details: { count: messages.length } },
    );
  }
  const id = nuid.next();
  const last = messages.length - 1;
  let ack: Record<string, unknown> | undefined;
  for (const [i, m] of messages.entries()) {
    m.headers.set("Nats-Batch-Id", id);
    m.headers.set("Nats-Batch-Sequence", String(i + 1));
    if (i === last) m.headers.set("Nats-Batch-Commit", "1");
    if (i === 0 || i === last) {
      const reply = await nc.request(m.subject, m.data, { headers: m.headers, timeout: timeoutMs });
      ack = parseReply(reply.data);
    } else {
      nc.publish(m.subject, m.data, { headers: m.headers });
    }
  }
  if (!ack || typeof ack.seq !== "number" || ack.count !== messages.length) {
    throw new DroverError(
      "batch-rejected",
      `atomic batch commit was not acknowledged as ${messages.length} messages: ${JSON.stringify(ack)}`,
      { details: { ack: ack ?? null } },
    );
  }
  return { stream: String(ack.stream), seq: ack.seq, count: ack.count };
}
