import type { Consumer, ConsumerMessages, JsMsg } from "@nats-io/jetstream";
import { LIVE_CONSUME } from "./consumer-outcome.ts";

/** A pull for messages known to be pending: they come at once; the expiry only bounds a purge under it. */
const TAKE_EXPIRES_MS = 1_000;

/**
 * A live read failed: the consumer went away (deleted, lost with a restarted server, its heartbeats
 * missed), or JetStream did not answer a pull or a consumer info (a request timeout, no responders,
 * a stream leader being elected). A read has no side effect, so every failure is the same: the live
 * loop starts again from its position, as when JetStream does not answer its consumer's creation.
 */
export class LiveReadLost extends Error {
  constructor(cause: unknown) {
    super(`live read lost: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "LiveReadLost";
  }
}

/**
 * An ordered consumer read in bursts rather than one message at a time. `consume()` keeps a pull
 * open, so the server sends each event as it is stored: one socket read, parse and iterator step per
 * event, ~80 ms of the forensics projector's CPU per 1 000 W2 steps (services/forensics/README.md).
 * Here a pull asks only for what is known to be there (`take`, `drain`), so a linger window's events
 * come as one burst; only `wait`, with nothing held, keeps a pull open, for one message.
 */
export interface BurstReader {
  /** The next message, waiting up to `LIVE_CONSUME.expires` (heartbeats notice a lost consumer); [] when none came. */
  wait(): Promise<JsMsg[]>;
  /** `n` messages known to be pending (the last delivered one's `info.pending`), at once. */
  take(n: number): Promise<JsMsg[]>;
  /** What is pending now, up to `max`, at once: one consumer info, then one pull (none when nothing is). */
  drain(max: number): Promise<JsMsg[]>;
  /** Ends the pull in flight; its read returns what came so far. */
  close(): void;
}

/** Reads `oc` (an ordered consumer: it keeps the order and recreates itself on a gap) in bursts. */
export function burstReader(oc: Consumer): BurstReader {
  let inFlight: ConsumerMessages | undefined;
  let closed = false;
  // Every failure of a read, not only the ones known to happen: a consumer info's `TimeoutError`
  // used to pass through as it was (the proof `nats-leader-kill`, and projection-live-faults.int.test.ts).
  const lost = (e: unknown): LiveReadLost => (e instanceof LiveReadLost ? e : new LiveReadLost(e));
  const pull = async (max: number, expires: number): Promise<JsMsg[]> => {
    const out: JsMsg[] = [];
    if (closed) return out;
    try {
      inFlight = await oc.fetch({ max_messages: max, expires });
      if (closed) void inFlight.close();
      for await (const m of inFlight) out.push(m);
    } catch (e) {
      throw lost(e);
    } finally {
      inFlight = undefined;
    }
    return out;
  };
  return {
    wait: () => pull(1, LIVE_CONSUME.expires),
    take: (n) => pull(n, TAKE_EXPIRES_MS),
    async drain(max) {
      if (closed) return [];
      let n: number;
      try {
        n = (await oc.info()).num_pending;
      } catch (e) {
        throw lost(e);
      }
      return n > 0 ? pull(Math.min(n, max), TAKE_EXPIRES_MS) : [];
    },
    close() {
      closed = true;
      void inFlight?.close().catch(() => undefined);
    },
  };
}
