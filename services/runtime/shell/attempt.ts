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
  run: (attempt: AttemptSignal) => Promise<T>,
): Promise<AttemptOutcome<T>> {
  // The attempt's own signal (what the step listens to goes with it), linked to the parent (see
  // linkedTo). Not AbortSignal.any, and no timer race without a timeout: those were ~3% of a
  // runtime's CPU journaling trivial steps (bench/runtime-steps). Made only when the step reads it.
  const own = new AttemptSignal(parent);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timedOut: DroverError | undefined;
  try {
    const running = run(own);
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
    own.done();
  }
}

/**
 * An attempt's abort signal, made on first read: a step that never reads it (a trivial compute
 * step) costs no AbortController (~6 µs each in Node 20, ~2% of a runtime's CPU per trivial step).
 * Read after the parent aborted or the attempt timed out, it is made aborted with that reason,
 * so a step sees the same signal state whenever it looks.
 */
export class AttemptSignal {
  private controller: AbortController | undefined;
  private reason: unknown;
  private aborted = false;

  constructor(private readonly parent: AbortSignal) {}

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = linkedTo(this.parent);
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    if (this.controller) return this.controller.abort(reason);
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
  }

  /** The attempt ended: its controller (if made) leaves the parent's set. */
  done(): void {
    if (this.controller) children.get(this.parent)?.delete(this.controller);
  }
}

/** The attempts in progress under each parent signal (an execution's), aborted with it. */
const children = new WeakMap<AbortSignal, Set<AbortController>>();

/**
 * A controller aborted when `parent` aborts (at once if it has), removed from the parent's set by
 * the attempt's end. One listener per parent signal for its whole life rather than one added and
 * removed per attempt: EventTarget listeners were ~2% of a runtime's CPU journaling trivial steps.
 */
function linkedTo(parent: AbortSignal): AbortController {
  const own = new AbortController();
  if (parent.aborted) {
    own.abort(parent.reason);
    return own;
  }
  let set = children.get(parent);
  if (!set) {
    const attempts = new Set<AbortController>();
    parent.addEventListener(
      "abort",
      () => {
        for (const c of attempts) c.abort(parent.reason);
        attempts.clear();
      },
      { once: true },
    );
    children.set(parent, (set = attempts));
  }
  set.add(own);
  return own;
}

/** A number in [0, 1) fixed by execution, step and attempt: the retry jitter is the same wherever it is computed. */
export function jitterUnit(executionId: string, stepId: string, attempt: number): number {
  const h = createHash("sha256").update(`${executionId}\u0000${stepId}\u0000${attempt}`).digest();
  return h.readUInt32BE(0) / 2 ** 32;
}
