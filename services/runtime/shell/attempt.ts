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
  const timeout = new AbortController();
  const signal = AbortSignal.any([parent, timeout.signal]);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, fail) => {
    if (step.timeoutMs === undefined) return;
    timer = setTimeout(() => {
      const e = new DroverError("step-timeout", `step ${step.id} ran longer than its timeoutMs of ${step.timeoutMs}`);
      timeout.abort(e);
      fail(e);
    }, step.timeoutMs);
  });
  try {
    return { ok: true, output: await Promise.race([run(signal), timedOut]) };
  } catch (e) {
    const err = timeout.signal.aborted && !parent.aborted ? timeout.signal.reason : e;
    if (isDroverError(err)) return { ok: false, message: err.message, code: err.code, retryable: err.retryable };
    return { ok: false, message: String((err as Error)?.message ?? err), retryable: true };
  } finally {
    if (timer) clearTimeout(timer);
  }
}

/** A number in [0, 1) fixed by execution, step and attempt: the retry jitter is the same wherever it is computed. */
export function jitterUnit(executionId: string, stepId: string, attempt: number): number {
  const h = createHash("sha256").update(`${executionId}\u0000${stepId}\u0000${attempt}`).digest();
  return h.readUInt32BE(0) / 2 ** 32;
}
