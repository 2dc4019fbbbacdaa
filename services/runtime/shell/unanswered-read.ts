import { setTimeout as delay } from "node:timers/promises";
import { isDroverError } from "../../../contracts/index.ts";

/**
 * Delays before a read is made again after a read nobody answered (each read is itself ~3.7 s of the
 * reader's own retries: streams/scoped-read.ts); the last repeats until one is answered.
 */
export const UNANSWERED_READ_DELAYS_MS: readonly number[] = [1000, 2000, 5000, 10_000];

/**
 * A read nobody answered (`event-store-unavailable`, retryable): no history responder while the
 * provisioner restarts, NATS down. An outage a step outlasts, unlike a read the server refuses.
 */
export const unanswered = (e: unknown): e is Error => isDroverError(e, "event-store-unavailable") && e.retryable;

/** The delay after `failed` (≥ 1) unanswered reads in a row: `delays` in turn, the last repeating. */
export const unansweredDelayMs = (delays: readonly number[], failed: number): number =>
  delays[Math.min(failed, delays.length) - 1] ?? 10_000;

/**
 * `read`, made again while nobody answers it (`unanswered`), `unansweredDelayMs` apart, telling
 * `onUnanswered` before each wait (the caller's log line). Resolves with the first answer; rejects
 * with a read's other error (a refused read fails its caller as before), or when `signal` aborts.
 * Used by waits (wait-steps.ts) and run steps (child-runs.ts).
 */
export async function untilAnswered<T>(
  read: () => Promise<T>,
  delays: readonly number[],
  signal: AbortSignal,
  onUnanswered: (u: { readonly unanswered: number; readonly nextReadInMs: number; readonly detail: string }) => void,
): Promise<T> {
  for (let failed = 1; ; failed++) {
    try {
      return await read();
    } catch (e) {
      if (!unanswered(e)) throw e;
      const nextReadInMs = unansweredDelayMs(delays, failed);
      onUnanswered({ unanswered: failed, nextReadInMs, detail: e.message.slice(0, 300) });
      await delay(nextReadInMs, undefined, { signal });
    }
  }
}
