import { hash } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { z } from "zod";
import { DroverError, EgressSettings, resolveRefs, type Step } from "../../../contracts/index.ts";
import { assertNever } from "../../../contracts/assert-never.ts";
import { flakyFails, stepInputs } from "../../../aggregates/step-inputs.ts";
import { isNonRetryable, type Json } from "../../../sdk/index.ts";
import { compileEgress, egressRequest, type EgressPolicy } from "./egress-request.ts";
import { callChatCompletion } from "./llm-client.ts";
import type { SecretResolver } from "./secrets.ts";
import type { LoadedWorker } from "./worker-module.ts";

/**
 * One-shot (`crypto.hash`): two digests a step (its inputs, its output), and a `Hash` object made per
 * digest cost ~5 µs against ~2 µs at the sizes of a step's inputs.
 */
export const sha256Hex = (s: string): string => hash("sha256", s, "hex");

/** What one attempt of a step sees: its recorded inputs and the means to stop early. */
export interface StepContext {
  readonly executionId: string;
  readonly attempt: number;
  /** Output digests of the step's dependencies, from the journal. */
  readonly depDigests: ReadonlyMap<string, string>;
  readonly signal: AbortSignal;
  readonly llmBaseUrl?: string;
  /** The run's tenant's egress policy for http and llm steps (absent: the default, public addresses only). */
  readonly egress?: EgressPolicy;
  /** Sleep steps: how long is left of the step's durable timer (the whole duration unless resumed). */
  readonly sleepMs?: number;
  /** The run's input and the dependencies' recorded outputs (only for steps that read them: see `needsOutputs`). */
  readonly data?: { readonly input: unknown; readonly outputs: ReadonlyMap<string, unknown>; readonly item?: unknown };
  readonly secrets?: SecretResolver;
  readonly worker?: LoadedWorker;
  readonly log?: (fields: Record<string, unknown>) => void;
}

/** Runs one attempt of a step; resolves with its JSON output, rejects with the reason the attempt failed. */
export type StepRunner = (step: Step, ctx: StepContext) => Promise<unknown>;

/** True for steps whose params are resolved against the run's input and their dependencies' outputs. */
export const needsOutputs = (step: Step): boolean =>
  step.kind === "http" || step.kind === "llm" || step.kind === "custom" || step.kind === "run";

/** Recorded response body, in characters (an output above the inline limit goes to the object store). */
const MAX_RECORDED_BODY = 1024 * 1024;

/**
 * The step kinds of runtime.md "DAG model" plus tenant `custom` steps. The built-ins are
 * deterministic given their recorded inputs; `http`, `llm` and `custom` record what they got, so
 * the journal's output is the truth on resume and a step is never re-run once recorded.
 */
export const runStep: StepRunner = async (step, ctx) => {
  const inputDigest = sha256Hex(stepInputs(step, ctx.depDigests));
  switch (step.kind) {
    case "compute":
      await work(step.params.durationMs, step.params.busy, ctx);
      return { digest: inputDigest };
    case "flaky":
      await work(step.params.durationMs, false, ctx);
      if (flakyFails(step.params.failAttempts, ctx.attempt))
        throw new Error(`flaky step fails attempt ${ctx.attempt} of the first ${step.params.failAttempts}`);
      return { digest: inputDigest, attempt: ctx.attempt };
    case "sleep":
      // The output names the step's duration, not the time left: it is the same whoever finished the timer.
      await sleepAtLeast(ctx.sleepMs ?? step.params.durationMs, ctx);
      return { sleptMs: step.params.durationMs };
    case "http":
      return callHttp(resolvedAs(ResolvedHttp, step, ctx), ctx.signal, ctx.egress ?? DEFAULT_EGRESS);
    case "llm": {
      const p = resolvedAs(ResolvedLlm, step, ctx);
      const base = p.baseUrl ?? ctx.llmBaseUrl;
      if (!base) throw new Error("llm step: no baseUrl in its params and DROVER_LLM_BASE_URL is not configured");
      const apiKey = step.params.apiKey ? ctx.secrets?.get(step.params.apiKey.$secret) : undefined;
      const policy = ctx.egress ?? DEFAULT_EGRESS;
      // The operator's DROVER_LLM_BASE_URL is trusted (configured by the operator, not the tenant);
      // a baseUrl from the step's params is checked like any http step's URL.
      const trusted = p.baseUrl === undefined ? operatorOrigin(base) : undefined;
      const egress = trusted
        ? { ...policy, rules: [...policy.rules, ...compileEgress(NO_EGRESS, [trusted]).rules] }
        : policy;
      return callChatCompletion(base, p, apiKey, (r) =>
        egressRequest({ ...r, signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(p.timeoutMs)]) }, egress),
      );
    }
    case "custom":
      return runCustom(step, ctx);
    case "run":
      // The execution runs run steps itself (child-runs.ts); a runner without its event store cannot.
      throw new DroverError("step-kind-unavailable", "this runner cannot submit child runs", { retryable: false });
    case "wait":
      // The execution runs wait steps itself (wait-steps.ts): they read the run's signals, not a worker.
      throw new DroverError("step-non-retryable", `wait step ${step.id} reached a step runner`, { retryable: false });
    default:
      return assertNever(step);
  }
};

const NO_EGRESS = EgressSettings.parse({});
const DEFAULT_EGRESS = compileEgress(NO_EGRESS);

function operatorOrigin(base: string): string | undefined {
  try {
    const u = new URL(base);
    return `${u.hostname}:${u.port || (u.protocol === "https:" ? 443 : 80)}`;
  } catch {
    return undefined;
  }
}

const ResolvedHttp = z.object({
  url: z.url({ protocol: /^https?$/ }),
  method: z.enum(["GET", "POST", "PUT", "DELETE"]),
  headers: z.record(z.string(), z.string()),
  body: z
    .string()
    .max(1024 * 1024)
    .optional(),
  timeoutMs: z.number(),
});
const ResolvedLlm = z.object({
  model: z.string(),
  prompt: z
    .string()
    .min(1)
    .max(256 * 1024),
  system: z
    .string()
    .max(256 * 1024)
    .optional(),
  maxTokens: z.number(),
  temperature: z.number(),
  timeoutMs: z.number(),
  baseUrl: z.string().optional(),
});

/** The step's params with `$ref`/`$secret` replaced, checked against the kind's resolved shape. */
function resolvedAs<T>(schema: z.ZodType<T>, step: Extract<Step, { kind: "http" | "llm" }>, ctx: StepContext): T {
  const { apiKey: _key, ...params } = step.params as typeof step.params & { apiKey?: unknown };
  const r = schema.safeParse(resolve(params, ctx));
  if (!r.success)
    throw new DroverError(
      "reference-unresolved",
      `step ${step.id}: resolved params do not fit a ${step.kind} step: ${r.error.issues[0]?.path.join(".")} ${r.error.issues[0]?.message}`,
      { retryable: false },
    );
  return r.data;
}

function resolve(params: unknown, ctx: StepContext): unknown {
  const data = ctx.data ?? { input: null, outputs: new Map() };
  try {
    return resolveRefs(params, data, (name) => {
      if (!ctx.secrets)
        throw new DroverError("secret-unavailable", `secret "${name}": this runtime has no secret source`);
      return ctx.secrets.get(name);
    });
  } catch (e) {
    if (e instanceof DroverError) throw e;
    throw new DroverError("reference-unresolved", (e as Error).message, { retryable: false });
  }
}

async function runCustom(step: Extract<Step, { kind: "custom" }>, ctx: StepContext): Promise<unknown> {
  const handler = ctx.worker?.handlers.get(step.handler);
  if (!handler)
    throw new DroverError("worker-invalid", `this runtime's worker has no step "${step.handler}"`, {
      retryable: false,
    });
  const input = resolve(step.params, ctx);
  const deps = Object.fromEntries(step.dependsOn.map((d) => [d, (ctx.data?.outputs.get(d) ?? null) as Json]));
  const redact = (s: string) => ctx.secrets?.redact(s) ?? s;
  const line = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    ctx.log?.({
      event: "step-log",
      level,
      executionId: ctx.executionId,
      stepId: step.id,
      attempt: ctx.attempt,
      message: redact(String(message)).slice(0, 4000),
      ...(fields ? { fields: JSON.parse(redact(JSON.stringify(fields))) as unknown } : {}),
    });
  try {
    const out = await handler(
      {
        executionId: ctx.executionId,
        stepId: step.id,
        attempt: ctx.attempt,
        signal: ctx.signal,
        runInput: (ctx.data?.input ?? null) as Json,
        deps,
        secrets: {
          get: (name) => {
            if (!ctx.secrets) throw new DroverError("secret-unavailable", `secret "${name}": no secret source`);
            return ctx.secrets.get(name);
          },
        },
        logger: { info: line("info"), warn: line("warn"), error: line("error") },
      },
      input,
    );
    return out === undefined ? null : out;
  } catch (e) {
    if (isNonRetryable(e))
      throw new DroverError("step-non-retryable", (e as Error).message, { retryable: false, cause: e });
    throw e;
  }
}

/**
 * Sleeps at least `ms` of real time. A timer can fire up to a millisecond early by the clock that
 * measures the step (libuv's cached loop time lags it): a 20 ms sleep step was journaled with
 * durationMs 19 (runs-api e2e in CI). The rest is slept out, so a step takes at least its duration.
 */
async function sleepAtLeast(ms: number, ctx: Pick<StepContext, "signal">): Promise<void> {
  const until = performance.now() + ms;
  // The signal is read only when there is something to wait for (a 0 ms step makes none: AttemptSignal).
  for (let left = ms; left > 0; left = until - performance.now())
    await delay(Math.ceil(left), undefined, { signal: ctx.signal });
}

async function work(durationMs: number, busy: boolean, ctx: Pick<StepContext, "signal">): Promise<void> {
  if (!busy) return sleepAtLeast(durationMs, ctx);
  // Spin in short slices so an abort (ownership lost, cancel) is seen within a few milliseconds.
  const end = performance.now() + durationMs;
  while (performance.now() < end) {
    ctx.signal.throwIfAborted();
    const slice = Math.min(end, performance.now() + 5);
    while (performance.now() < slice) {
      /* busy */
    }
    await delay(0);
  }
}

async function callHttp(
  p: z.output<typeof ResolvedHttp>,
  signal: AbortSignal,
  egress: EgressPolicy,
): Promise<Record<string, unknown>> {
  const res = await egressRequest(
    {
      url: p.url,
      method: p.method,
      headers: p.headers,
      ...(p.body === undefined ? {} : { body: p.body }),
      signal: AbortSignal.any([signal, AbortSignal.timeout(p.timeoutMs)]),
    },
    egress,
  );
  const text = res.text;
  // The response is recorded before the step completes: a resumed run reuses it, never calls again.
  if (res.status < 200 || res.status > 299)
    throw new Error(`http ${p.method} ${p.url} answered ${res.status}: ${text.slice(0, 200)}`);
  return {
    status: res.status,
    body: text.slice(0, MAX_RECORDED_BODY),
    truncated: text.length > MAX_RECORDED_BODY,
    bodyDigest: sha256Hex(text),
  };
}
