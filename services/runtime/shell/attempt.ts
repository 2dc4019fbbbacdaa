import { createHash } from "node:crypto";
import { DroverError, isDroverError, type ErrorCode, type Step } from "../../../contracts/index.ts";

export type AttemptOutcome<T> =
  | { readonly ok: true; readonly output: T }
  | { readonly ok: false; readonly message: string; readonly code?: ErrorCode; readonly retryable: boolean };

/**
 * Runs one attempt under its step's `timeoutMs`: the attempt's signal aborts when the execution's
 * does or the timeout passes, and the attempt fails with `step-timeout` at the timeout even if the
 * step ignores its signal (its late result is dropped). Typed errors keep their code and
 * retryability (`step-non-retryable`, `reference-unresolved`, ... never retry); anything else is a
 * retryable failure of the attempt.
 */
export async function attemptOutcome<T>(
  step: Pick<Step, "id" | "timeoutMs">,
  parent: AbortSignal,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<AttemptOutcome<T>> {
  // The attempt's own signal, linked to the parent by one listener removed when the attempt ends
  // (what the step listens to goes with it). Not AbortSignal.any, and no timer race without a
  // timeout: those were ~3% of a runtime's CPU journaling trivial steps (bench/runtime-steps).
  const own = new AbortController();
  const onParent = () => own.abort(parent.reason);
  if (parent.aborted) own.abort(parent.reason);
  else parent.addEventListener("abort", onParent, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timedOut: DroverError | undefined;
  try {
    const running = run(own.signal);
    const output =
      step.timeoutMs === undefined
        ? await running
        : await Promise.race([
            running,
            new Promise<never>((_, fail) => {
              timer = setTimeout(() => {
                timedOut = new DroverError(
                  "step-timeout",
                  `step ${step.id} ran longer than its timeoutMs of ${step.timeoutMs}`,
                );
                own.abort(timedOut);
                fail(timedOut);
              }, step.timeoutMs);
            }),
          ]);
    return { ok: true, output };
  } catch (e) {
    const err = timedOut && !parent.aborted ? timedOut : e;
    if (isDroverError(err)) return { ok: false, message: err.message, code: err.code, retryable: err.retryable };
    return { ok: false, message: String((err as Error)?.message ?? err), retryable: true };
  } finally {
    if (timer) clearTimeout(timer);
    parent.removeEventListener("abort", onParent);
  }
}

/** A number in [0, 1) fixed by execution, step and attempt: the retry jitter is the same wherever it is computed. */
export function jitterUnit(executionId: string, stepId: string, attempt: number): number {
  const h = createHash("sha256").update(`${executionId}\u0000${stepId}\u0000${attempt}`).digest();
  return h.readUInt32BE(0) / 2 ** 32;
}
