import { isDroverError } from "../contracts/index.ts";
import { isTransportFailure } from "../streams/nats-errors.ts";

/** True for a failure that says only "JetStream did not answer" (no answer, no responder, a retryable store error). */
export const isUnavailable = (e: unknown): boolean =>
  isTransportFailure(e) || (isDroverError(e, "event-store-unavailable") && e.retryable !== false);

/**
 * Runs a service's start-up, again while it fails only because JetStream does not answer (a
 * cluster electing a leader after a node died takes 5–10 s), until `withinMs` has passed; any
 * other failure, or one past the deadline, is thrown. Seen in `drover proof --kill-nats-leader`:
 * the forensics projector starting during the election exited at its first replay.
 */
export async function startPatiently<T>(
  start: () => Promise<T>,
  onRetry: (e: unknown) => void = () => undefined,
  withinMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    try {
      return await start();
    } catch (e) {
      if (!isUnavailable(e) || Date.now() > deadline) throw e;
      onRetry(e);
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }
}
