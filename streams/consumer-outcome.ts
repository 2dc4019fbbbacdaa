import { isDroverError } from "../contracts/index.ts";

/** What a durable consumer tells the server about one delivery. */
export type Outcome =
  | { readonly kind: "ack" }
  | { readonly kind: "nak"; readonly delayMs: number }
  | { readonly kind: "term"; readonly reason: string };

export interface RetryPolicy {
  /** The consumer's max_deliver: on the last delivery a failure is given up at once (dead-lettered). */
  readonly maxDeliver: number;
  /** Redelivery delay after the n-th failed delivery (index n-1; the last value repeats). */
  readonly backoffMs: readonly number[];
}

export const DEFAULT_BACKOFF_MS: readonly number[] = [250, 1000, 5000, 15000];
const MAX_REASON = 256;

/**
 * The one place handler outcomes become acknowledgements (conventions.md "Errors"):
 * success → ack; a typed error that is not retryable (contract violations among them) → term with
 * `<code>: <message>` as the reason, because redelivering cannot change the answer; a retryable
 * typed error or any unknown error (treated as an infrastructure fault) → nak with backoff by
 * delivery count, except on the last allowed delivery, where the delay is 0 so the server
 * gives up (and the dead-letter stream records it) now rather than after a pointless wait.
 */
export function outcomeOf(
  failure: { readonly error: unknown } | undefined,
  deliveryCount: number,
  policy: RetryPolicy,
): Outcome {
  if (failure === undefined) return { kind: "ack" };
  const e = failure.error;
  if (isDroverError(e) && !e.retryable) return { kind: "term", reason: `${e.code}: ${e.message}`.slice(0, MAX_REASON) };
  if (policy.maxDeliver > 0 && deliveryCount >= policy.maxDeliver) return { kind: "nak", delayMs: 0 };
  const table = policy.backoffMs.length > 0 ? policy.backoffMs : DEFAULT_BACKOFF_MS;
  return { kind: "nak", delayMs: table[Math.min(Math.max(deliveryCount, 1), table.length) - 1]! };
}

/**
 * Options of every live `consume()`: a pull expires after 5 s, so the server's idle heartbeat comes
 * every 2.5 s and a consumer lost with a restarted server is noticed (two missed heartbeats) and
 * recreated within about 5 s; nats.js's default (30 s) left followers blind for 30–40 s after a
 * NATS restart, long enough for capacity to look gone and for health to see silence.
 */
export const LIVE_CONSUME = { expires: 5_000 } as const;
