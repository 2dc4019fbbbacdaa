import type { NatsConnection } from "@nats-io/transport-node";
import type { StreamLayout } from "./layout.ts";

/** A message a follower could not use and stepped over (it stays in its stream: deny_delete). */
export interface Skip {
  readonly seq: number;
  readonly subject: string;
  readonly error: string;
  /** The stream it was read from (default: the event stream). */
  readonly stream?: string;
}

/** Records a skipped message; `count` is how many this recorder recorded (the service's metric). */
export interface SkipRecorder {
  (s: Skip): void;
  readonly count: number;
}

/**
 * Poison-proof followers (issue 14): a message that does not decode, has an unknown type or a newer
 * schema version than this build knows, or whose fold refuses it, is recorded and stepped over —
 * no follower exits or blocks on it. The record is a `terminated` advisory published where the
 * dead-letter stream already captures the server's own (`$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.<stream>.<consumer>`),
 * so `readDeadLetters` lists it with the stream sequence, the consumer and the reason; plus one log
 * line per message and the count.
 */
export function skipRecorder(
  nc: NatsConnection,
  layout: StreamLayout,
  consumer: string,
  log: { warn(o: object, msg: string): void },
): SkipRecorder {
  let count = 0;
  const token = consumer.replace(/[^A-Za-z0-9_-]/g, "_");
  const record = (s: Skip) => {
    count += 1;
    const stream = s.stream ?? layout.eventStream;
    log.warn({ consumer, stream, seq: s.seq, subject: s.subject, err: s.error, skipped: count }, "skipped a message");
    const advisory = {
      type: "io.nats.jetstream.advisory.v1.terminated",
      stream,
      consumer: token,
      stream_seq: s.seq,
      deliveries: 1,
      reason: `skipped: ${s.error}`.slice(0, 1000),
      timestamp: new Date().toISOString(),
    };
    try {
      nc.publish(`$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.${layout.eventStream}.${token}`, JSON.stringify(advisory));
    } catch (e) {
      log.warn({ consumer, err: String(e) }, "could not record the skipped message in the dead-letter stream");
    }
  };
  return Object.defineProperty(record, "count", { get: () => count }) as SkipRecorder;
}
