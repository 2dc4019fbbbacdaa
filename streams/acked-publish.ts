import { JetStreamApiError, type PubAck } from "@nats-io/jetstream";
import {
  ClosedConnectionError,
  createInbox,
  NoRespondersError,
  TimeoutError,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
} from "@nats-io/transport-node";

/** The expectations of one conditional publish (the headers JetStream checks before storing). */
export interface PublishExpect {
  readonly streamName: string;
  readonly lastSubjectSequence: number;
  readonly lastSubjectSequenceSubject: string;
}

/** A JetStream publish awaiting its ack: what `JetStreamClient.publish` does for one message. */
export type AckedPublish = (
  subject: string,
  data: Uint8Array,
  o: { readonly msgID: string; readonly timeout: number; readonly expect: PublishExpect },
) => Promise<PubAck>;

interface Waiter {
  readonly subject: string;
  readonly ok: (a: PubAck) => void;
  readonly fail: (e: unknown) => void;
  /** When it fails with `TimeoutError` unless answered (Date.now() ms). */
  readonly deadline: number;
}

const decoder = new TextDecoder();

/**
 * JetStream publishes with their acks read from one reply subscription of this connection (on its
 * inbox prefix, like the client's own request multiplexer). Same wire messages, headers and
 * failures as `js.publish` (a refusal is a `JetStreamApiError` with the server's code, no answer a
 * `TimeoutError`, no stream a `NoRespondersError`, a closed connection a `ClosedConnectionError`),
 * without the client's per-request costs: nats.js builds a stack-captured `RequestError` for every
 * request it settles, even a successful one, which was ~5% of a runtime's CPU journaling trivial
 * steps (bench/runtime-steps profile). Every publish is still one conditional request awaiting its
 * own ack.
 */
export function ackedPublisher(nc: NatsConnection): AckedPublish {
  // One reply subscription per connection, however many stores (consumers, services) share it.
  let p = publishers.get(nc);
  if (!p) publishers.set(nc, (p = newPublisher(nc)));
  return p;
}

const publishers = new WeakMap<NatsConnection, AckedPublish>();

function newPublisher(nc: NatsConnection): AckedPublish {
  // The connection's inbox prefix (a runtime may read replies on `_INBOX_<id>.>` only: nats-identities.md).
  const prefix = createInbox((nc as unknown as { options?: { inboxPrefix?: string } }).options?.inboxPrefix);
  const waiting = new Map<string, Waiter>();
  let next = 0;
  let subscribed = false;
  const settle = (token: string): Waiter | undefined => {
    const w = waiting.get(token);
    if (!w) return undefined;
    waiting.delete(token);
    return w;
  };
  const deadlines = deadlineSweep(waiting, (token) => settle(token)?.fail(new TimeoutError()));
  const onReply = (m: Msg) => {
    const w = settle(m.subject.slice(prefix.length + 1));
    if (!w) return; // late (timed out) or not ours
    if (m.data.length === 0 && m.headers?.code === 503) return w.fail(new NoRespondersError(w.subject));
    try {
      const r = JSON.parse(decoder.decode(m.data)) as PubAck & {
        error?: ConstructorParameters<typeof JetStreamApiError>[0];
      };
      if (r.error) return w.fail(new JetStreamApiError(r.error));
      if (!r.stream) return w.fail(new Error("invalid ack response"));
      w.ok({ ...r, duplicate: r.duplicate ?? false });
    } catch (e) {
      w.fail(e);
    }
  };
  const subscribe = () => {
    subscribed = true;
    nc.subscribe(`${prefix}.*`, { callback: (_err, m) => onReply(m) });
    void nc.closed().then(() => {
      for (const token of [...waiting.keys()]) settle(token)?.fail(new ClosedConnectionError());
    });
  };
  return (subject, data, o) =>
    new Promise<PubAck>((ok, fail) => {
      if (!subscribed) subscribe();
      const token = String(++next);
      let h: HeaderBlock;
      try {
        h = conditionalHeaders(o.msgID, o.expect);
      } catch (e) {
        return fail(e);
      }
      const deadline = Date.now() + o.timeout;
      waiting.set(token, { subject, ok, fail, deadline });
      deadlines.armFor(deadline);
      try {
        nc.publish(subject, data, { reply: `${prefix}.${token}`, headers: h as unknown as MsgHdrs });
      } catch (e) {
        settle(token);
        fail(e);
      }
    });
}

const encoder = new TextEncoder();
const LINE_BREAK = /[\r\n]/;

/**
 * The header block of a conditional publish, byte for byte what nats.js's `headers()` with these four
 * `set`s encodes (`NATS/1.0`, then `Key: value` lines in this order, values trimmed, a blank line),
 * built as one string: the client's `MsgHdrs` (a Map of arrays, a key and a value check per `set`)
 * was ~6 µs of every append, one append per journaled step. The client reads nothing of a
 * publish's headers but `encode()`. A value with a line break is refused as the client refuses it.
 */
export function conditionalHeaders(msgID: string, expect: PublishExpect): HeaderBlock {
  const { streamName, lastSubjectSequenceSubject: subject } = expect;
  if (LINE_BREAK.test(msgID) || LINE_BREAK.test(streamName) || LINE_BREAK.test(subject))
    throw new TypeError("header values cannot contain \\r or \\n");
  const text =
    `NATS/1.0\r\nNats-Msg-Id: ${msgID.trim()}\r\nNats-Expected-Stream: ${streamName.trim()}\r\n` +
    `Nats-Expected-Last-Subject-Sequence: ${expect.lastSubjectSequence}\r\n` +
    `Nats-Expected-Last-Subject-Sequence-Subject: ${subject.trim()}\r\n\r\n`;
  return { encode: () => encoder.encode(text) };
}

/** What the client's publish reads of `MsgHdrs` (nats-core protocol.js `publish`: `headers.encode()`). */
export interface HeaderBlock {
  encode(): Uint8Array;
}

/**
 * One timer for every publish awaiting its ack, armed for the earliest deadline, instead of a
 * timer set and cleared per publish (~3% of a runtime's CPU journaling trivial steps, bench/
 * workloads W1 profile: setTimeout, the timer list's insert, clearTimeout). When it fires it
 * times out each waiter past its deadline and re-arms for the earliest one left, so a publish still
 * fails at its own deadline (±1 ms), whatever the order of the timeouts. Unref'd: a pending publish
 * is kept alive by its connection's socket, and a closed connection fails every waiter.
 */
function deadlineSweep(waiting: ReadonlyMap<string, { readonly deadline: number }>, expire: (token: string) => void) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let armedAt = Infinity;
  const arm = (at: number) => {
    if (timer) clearTimeout(timer);
    armedAt = at;
    timer = setTimeout(sweep, Math.max(0, at - Date.now()));
    timer.unref();
  };
  const sweep = () => {
    timer = undefined;
    armedAt = Infinity;
    const now = Date.now();
    let earliest = Infinity;
    for (const [token, w] of [...waiting]) {
      if (w.deadline <= now) expire(token);
      else earliest = Math.min(earliest, w.deadline);
    }
    if (earliest !== Infinity) arm(earliest);
  };
  return {
    /** A waiter with this deadline was added: fire no later than it. */
    armFor: (deadline: number) => {
      if (deadline < armedAt) arm(deadline);
    },
  };
}
