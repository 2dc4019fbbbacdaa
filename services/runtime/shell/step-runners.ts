import { createHash } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import type { Step } from "../../../contracts/index.ts";
import { assertNever } from "../../../aggregates/assert-never.ts";
import { flakyFails, stepInputs } from "../../../aggregates/step-inputs.ts";
import { callChatCompletion } from "./llm-client.ts";

export const sha256Hex = (s: string): string => createHash("sha256").update(s).digest("hex");

/** What one attempt of a step sees: its recorded inputs and the means to stop early. */
export interface StepContext {
  readonly executionId: string;
  readonly attempt: number;
  /** Output digests of the step's dependencies, from the journal. */
  readonly depDigests: ReadonlyMap<string, string>;
  readonly signal: AbortSignal;
  readonly llmBaseUrl?: string;
  /** Sleep steps: how long is left of the step's durable timer (the whole duration unless resumed). */
  readonly sleepMs?: number;
}

/** Runs one attempt of a step; resolves with its JSON output, rejects with the reason the attempt failed. */
export type StepRunner = (step: Step, ctx: StepContext) => Promise<Record<string, unknown>>;

const MAX_RECORDED_BODY = 4096;

/**
 * The step kinds of runtime.md "DAG model". Each is deterministic given its recorded inputs, so
 * the journal's output is the truth on resume and a step is never re-run once recorded. Outputs are
 * flat objects (no nested arrays: the read models cannot store them).
 */
export const runStep: StepRunner = async (step, ctx) => {
  const inputDigest = sha256Hex(stepInputs(step, ctx.depDigests));
  switch (step.kind) {
    case "compute":
      await work(step.params.durationMs, step.params.busy, ctx.signal);
      return { digest: inputDigest };
    case "flaky":
      await work(step.params.durationMs, false, ctx.signal);
      if (flakyFails(step.params.failAttempts, ctx.attempt))
        throw new Error(`flaky step fails attempt ${ctx.attempt} of the first ${step.params.failAttempts}`);
      return { digest: inputDigest, attempt: ctx.attempt };
    case "sleep":
      // The output names the step's duration, not the time left: it is the same whoever finished the timer.
      await delay(ctx.sleepMs ?? step.params.durationMs, undefined, { signal: ctx.signal });
      return { sleptMs: step.params.durationMs };
    case "http":
      return callHttp(step.params, ctx.signal);
    case "llm":
      if (!ctx.llmBaseUrl) throw new Error("llm step: DROVER_LLM_BASE_URL is not configured on this runtime");
      return callChatCompletion(ctx.llmBaseUrl, step.params, ctx.signal);
    default:
      return assertNever(step);
  }
};

async function work(durationMs: number, busy: boolean, signal: AbortSignal): Promise<void> {
  if (!busy) return durationMs > 0 ? delay(durationMs, undefined, { signal }) : undefined;
  // Spin in short slices so an abort (ownership lost, cancel) is seen within a few milliseconds.
  const end = performance.now() + durationMs;
  while (performance.now() < end) {
    signal.throwIfAborted();
    const slice = Math.min(end, performance.now() + 5);
    while (performance.now() < slice) {
      /* busy */
    }
    await delay(0);
  }
}

async function callHttp(
  p: Extract<Step, { kind: "http" }>["params"],
  signal: AbortSignal,
): Promise<Record<string, unknown>> {
  const res = await fetch(p.url, {
    method: p.method,
    headers: p.headers,
    body: p.body,
    signal: AbortSignal.any([signal, AbortSignal.timeout(p.timeoutMs)]),
  });
  const text = await res.text();
  // The response is recorded before the step completes: a resumed run reuses it, never calls again.
  if (!res.ok) throw new Error(`http ${p.method} ${p.url} answered ${res.status}: ${text.slice(0, 200)}`);
  return {
    status: res.status,
    body: text.slice(0, MAX_RECORDED_BODY),
    truncated: text.length > MAX_RECORDED_BODY,
    bodyDigest: sha256Hex(text),
  };
}
