import {
  JetStreamApiCodes,
  JetStreamError,
  type Consumer,
  type ConsumerMessages,
  type JsMsg,
} from "@nats-io/jetstream";
import { LIVE_CONSUME } from "./consumer-outcome.ts";
import { jsCode } from "./nats-errors.ts";

/** A pull for messages known to be pending: they come at once; the expiry only bounds a purge under it. */
const TAKE_EXPIRES_MS = 1_000;

/**
 * The live consumer went away under a read (deleted, lost with a restarted server, its heartbeats
 * missed): the live loop starts again from the checkpoint, as when JetStream does not answer.
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
  const lost = (e: unknown): unknown =>
    jsCode(e) === JetStreamApiCodes.ConsumerNotFound || (e instanceof JetStreamError && !closed)
      ? new LiveReadLost(e)
      : e;
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
