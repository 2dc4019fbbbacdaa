/**
 * drover's step SDK (docs/sdk.md): what a tenant's worker module imports. It has no dependency on
 * the control plane, so a worker bundles to a small file and a runtime loads it by path.
 *
 * ```ts
 * import { defineWorker, NonRetryableError } from "drover/sdk";
 * export default defineWorker({
 *   steps: {
 *     "chunk-text": async (ctx, input: { text: string }) => ({ chunks: split(input.text) }),
 *   },
 * });
 * ```
 *
 * Determinism contract: a step is the unit of durability. Once a step's output is journaled it is
 * never recomputed (resume, replay and dependents read the journal); code between steps does not
 * exist. A handler may do anything (call services, use time and randomness), but only its returned
 * JSON survives, and it may run more than once for one step (an attempt whose runtime died before
 * its output was journaled runs again): make side effects idempotent, keyed by
 * `ctx.executionId` + `ctx.stepId`.
 */

/** JSON a step takes and returns. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Largest output a step may return, in bytes of JSON text; more fails the attempt (`step-output-too-large`). */
export const OUTPUT_MAX_BYTES = 4 * 1024 * 1024;

export interface StepLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** What one attempt of a step sees besides its input. */
export interface StepContext {
  /** The durable execution; the same after a resume on another runtime. */
  readonly executionId: string;
  readonly stepId: string;
  /** 1 for the first attempt; a retry after a failure gets the next number (a crash does not). */
  readonly attempt: number;
  /** Aborted on cancel, on lost ownership (fencing), on the step's `timeoutMs` and the run's deadline. */
  readonly signal: AbortSignal;
  /** The run's input (`POST /v1/runs` `input`), or null. */
  readonly runInput: Json;
  /** Recorded outputs of the step's dependencies, by step id. */
  readonly deps: Readonly<Record<string, Json>>;
  /** The tenant's secrets, resolved at execution time; never write them into an output or a log. */
  readonly secrets: { get(name: string): string };
  /** Lines go to the runtime's log with execution, step and attempt; known secret values are redacted. */
  readonly logger: StepLogger;
}

/**
 * A step handler: gets its step's resolved input (the DAG step's `params` with `$ref`/`$secret`
 * replaced) and returns its output (JSON, at most OUTPUT_MAX_BYTES). Throwing fails the attempt
 * and the step's retry policy applies; throw {@link NonRetryableError} to fail without retry.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a handler narrows its own input type
export type StepHandler = (ctx: StepContext, input: any) => Json | void | Promise<Json | void>;

/** Fails the attempt and the step: no further attempt is made whatever the retry policy. */
export class NonRetryableError extends Error {
  readonly nonRetryable = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NonRetryableError";
  }
}

/** Marks a worker so a runtime can tell it from any other default export (not an identity check across copies). */
export const WORKER_BRAND = Symbol.for("drover.worker.v1");

export interface Worker {
  readonly [WORKER_BRAND]: 1;
  readonly steps: Readonly<Record<string, StepHandler>>;
}

const HANDLER_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Declares a worker: handler name (the DAG's `custom` step `handler`, lowercase [a-z0-9-]) → handler. */
export function defineWorker(def: { steps: Record<string, StepHandler> }): Worker {
  for (const [name, fn] of Object.entries(def.steps)) {
    if (!HANDLER_NAME.test(name)) throw new Error(`defineWorker: step name "${name}" is not lowercase [a-z0-9-]`);
    if (typeof fn !== "function") throw new Error(`defineWorker: step "${name}" is not a function`);
  }
  return Object.freeze({ [WORKER_BRAND]: 1 as const, steps: Object.freeze({ ...def.steps }) });
}

/** True for a value made by {@link defineWorker} (of any copy of this SDK). */
export function isWorker(value: unknown): value is Worker {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as Record<symbol, unknown>)[WORKER_BRAND] === 1 &&
    typeof (value as { steps?: unknown }).steps === "object"
  );
}

/** True for an error that must not be retried (a {@link NonRetryableError} of any copy of this SDK). */
export const isNonRetryable = (e: unknown): boolean =>
  typeof e === "object" && e !== null && (e as { nonRetryable?: unknown }).nonRetryable === true;
