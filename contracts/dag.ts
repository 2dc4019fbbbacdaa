import { z } from "zod";
import { StepId } from "./ids.ts";
import { RefValue, SecretValue, refIssues } from "./step-refs.ts";
import { Condition, Trigger, conditionIssues } from "./condition.ts";
import { MapSpec, mapIssues } from "./map.ts";
import { StepCacheSpec, cacheIssues } from "./step-cache.ts";
import { OnParentCancel, childRunIssues, type DagCheck } from "./child-run.ts";
import { WaitParams, waitIssues } from "./wait.ts";

/**
 * The DAG a run carries (runtime.md "DAG model"). Step kinds are a closed set; each kind has its
 * own params schema. `DagDefinition` validates shape, ids, dependencies, acyclicity and size, so a
 * DAG that parses is executable.
 */
export const DAG_LIMITS = { maxSteps: 500, maxParamsBytes: 16 * 1024, maxDependsOn: 64 } as const;

/** A string param that may instead be a `$ref` (resolved when the step runs, then checked as a string). */
const textOrRef = (s: z.ZodString) => z.union([s, RefValue]);

export const RetryPolicy = z
  .object({
    maxAttempts: z.number().int().min(1).max(20).describe("attempts including the first"),
    backoffMs: z.number().int().min(0).max(600_000).describe("delay before attempt n+1 is backoffMs * 2^(n-1)"),
    maxDelayMs: z.number().int().min(0).max(3_600_000).optional().describe("cap on one back-off delay"),
    jitter: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe("fraction of the delay drawn at random (deterministic per execution, step, attempt) and subtracted"),
  })
  .strict();
export type RetryPolicy = z.infer<typeof RetryPolicy>;

const durationMs = z.number().int().min(0).max(3_600_000);
export const ComputeParams = z
  .object({
    durationMs: durationMs.default(0),
    busy: z.boolean().default(false).describe("spin the CPU instead of a timer"),
  })
  .strict();
export const FlakyParams = z
  .object({
    durationMs: durationMs.default(0),
    failAttempts: z
      .number()
      .int()
      .min(0)
      .max(19)
      .describe("the first N attempts fail (deterministic); must be < retry.maxAttempts to succeed"),
  })
  .strict();
export const SleepParams = z.object({ durationMs }).strict();
export const HttpParams = z
  .object({
    url: z.union([z.url({ protocol: /^https?$/ }), RefValue]),
    method: z.enum(["GET", "POST", "PUT", "DELETE"]).default("GET"),
    headers: z.record(z.string(), z.union([z.string(), RefValue, SecretValue])).default({}),
    body: textOrRef(z.string().max(8192)).optional(),
    timeoutMs: z.number().int().min(1).max(120_000).default(10_000),
  })
  .strict();
export const LlmParams = z
  .object({
    model: textOrRef(z.string().min(1).max(128)),
    prompt: textOrRef(z.string().min(1).max(8192)),
    system: textOrRef(z.string().max(8192)).optional(),
    apiKey: SecretValue.optional().describe("bearer key for a hosted provider, by secret reference only"),
    baseUrl: z
      .url({ protocol: /^https?$/ })
      .optional()
      .describe("OpenAI-compatible base URL; default: the runtime's"),
    maxTokens: z.number().int().min(1).max(32_768).default(256),
    temperature: z.number().min(0).max(2).default(0),
    timeoutMs: z.number().int().min(1).max(300_000).default(60_000),
  })
  .strict();

/** A custom step's handler name: the key of the tenant worker's `steps` (sdk/). */
export const HandlerName = z
  .string()
  .regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, "a handler name is lowercase [a-z0-9-], at most 63 characters");

const retryDefault = { maxAttempts: 1, backoffMs: 0 };
const base = {
  id: StepId,
  dependsOn: z.array(StepId).max(DAG_LIMITS.maxDependsOn).default([]),
  retry: RetryPolicy.default(retryDefault),
  timeoutMs: z
    .number()
    .int()
    .min(1)
    .max(86_400_000)
    .optional()
    .describe("an attempt running longer fails with step-timeout (and retries per policy)"),
  when: Condition.optional().describe("CEL condition over input and steps.<dependency>; false skips the step"),
  trigger: Trigger.optional().describe("when the step runs given its dependencies' states; default all-completed"),
  map: MapSpec.optional().describe('run the step once per item of an array (docs/control-flow.md "Map")'),
  cache: StepCacheSpec.optional().describe("reuse a cached output across runs (docs/step-cache.md)"),
};
export const Step = z.discriminatedUnion("kind", [
  z
    .object({ ...base, kind: z.literal("compute"), params: ComputeParams.default({ durationMs: 0, busy: false }) })
    .strict(),
  z.object({ ...base, kind: z.literal("flaky"), params: FlakyParams }).strict(),
  z.object({ ...base, kind: z.literal("sleep"), params: SleepParams }).strict(),
  z.object({ ...base, kind: z.literal("http"), params: HttpParams }).strict(),
  z.object({ ...base, kind: z.literal("llm"), params: LlmParams }).strict(),
  z
    .object({
      ...base,
      kind: z.literal("custom"),
      handler: HandlerName.describe("the tenant worker's step that runs it"),
      params: z.json().default({}).describe("the handler's input; may hold $ref and $secret values"),
    })
    .strict(),
  z
    .object({
      ...base,
      kind: z.literal("run"),
      dag: z.record(z.string(), z.unknown()).describe('the child run\'s DAG (docs/control-flow.md "Child runs")'),
      params: z.json().default({}).describe("the child run's input; may hold $ref values"),
      onParentCancel: OnParentCancel.default("cancel"),
    })
    .strict(),
  z.object({ ...base, kind: z.literal("wait"), params: WaitParams }).strict(),
]);
export type Step = z.infer<typeof Step>;
export type StepKind = Step["kind"];
export const STEP_KINDS = [
  "compute",
  "flaky",
  "sleep",
  "http",
  "llm",
  "custom",
  "run",
  "wait",
] as const satisfies readonly StepKind[];
/** The kinds every runtime runs without a tenant worker. */
export const BUILTIN_STEP_KINDS = ["compute", "flaky", "sleep", "http", "llm", "run", "wait"] as const;

/**
 * The step kind a step needs from its runtime: its built-in kind, or `custom:<handler>`. Runtimes
 * advertise the same strings (runtime `registered` stepKinds); admission matches them.
 */
export const requiredKindOf = (step: { kind: string; handler?: string }): string =>
  step.kind === "custom" ? `custom:${step.handler}` : step.kind;

/** Every step kind a DAG needs, sorted and unique. */
export const requiredStepKinds = (dag: { steps: readonly { kind: string; handler?: string }[] }): string[] =>
  [...new Set(dag.steps.map(requiredKindOf))].sort();

const utf8 = new TextEncoder();

/** Structural checks beyond the per-step schema; each returns a message naming the offending step. */
export function dagIssues(
  steps: readonly (Pick<Step, "id" | "dependsOn" | "params" | "when" | "map"> & { kind?: string })[],
): string[] {
  const issues: string[] = [];
  const ids = new Set<string>();
  for (const s of steps) {
    if (ids.has(s.id)) issues.push(`duplicate step id "${s.id}"`);
    ids.add(s.id);
    const json = JSON.stringify(s.params ?? {});
    // UTF-8 takes at most 3 bytes per UTF-16 unit: short params need no encoding to be measured.
    const size = json.length * 3 <= DAG_LIMITS.maxParamsBytes ? json.length : utf8.encode(json).length;
    if (size > DAG_LIMITS.maxParamsBytes)
      issues.push(`step "${s.id}" params are ${size} bytes, more than ${DAG_LIMITS.maxParamsBytes}`);
  }
  for (const s of steps) {
    for (const d of s.dependsOn) {
      if (!ids.has(d)) issues.push(`step "${s.id}" depends on unknown step "${d}"`);
      if (d === s.id) issues.push(`step "${s.id}" depends on itself`);
    }
    issues.push(...refIssues(s), ...conditionIssues(s));
  }
  issues.push(...mapIssues(steps), ...waitIssues(steps));
  if (issues.length === 0) {
    const cycle = findCycle(steps);
    if (cycle) issues.push(`dependency cycle: ${cycle.join(" -> ")}`);
  }
  return issues;
}

/** Returns one cycle as a path of step ids (first id repeated at the end), or undefined. */
export function findCycle(
  steps: readonly { readonly id: string; readonly dependsOn: readonly string[] }[],
): string[] | undefined {
  const deps = new Map(steps.map((s) => [s.id, s.dependsOn]));
  const state = new Map<string, "visiting" | "done">();
  const path: string[] = [];
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === "done") return undefined;
    if (state.get(id) === "visiting") return [...path.slice(path.indexOf(id)), id];
    state.set(id, "visiting");
    path.push(id);
    for (const d of deps.get(id) ?? []) {
      const c = visit(d);
      if (c) return c;
    }
    path.pop();
    state.set(id, "done");
    return undefined;
  };
  for (const s of [...steps].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    const c = visit(s.id);
    if (c) return c;
  }
  return undefined;
}

export const DagDefinition = z
  .object({
    name: z.string().min(1).max(128).optional(),
    deadlineMs: z
      .number()
      .int()
      .min(1)
      .max(7 * 86_400_000)
      .optional()
      .describe("the run fails with run-deadline-exceeded when its execution runs longer"),
    steps: z
      .array(Step)
      .min(1, "a DAG needs at least one step")
      .max(DAG_LIMITS.maxSteps, `a DAG has at most ${DAG_LIMITS.maxSteps} steps`),
  })
  .strict()
  .superRefine((dag, ctx) => {
    for (const message of [...dagIssues(dag.steps), ...cacheIssues(dag.steps)])
      ctx.addIssue({ code: "custom", message, path: ["steps"] });
    // A run step's child DAG is checked by this same schema (so its own run steps are, one level down).
    for (const message of childRunIssues(dag.steps, checkChildDag))
      ctx.addIssue({ code: "custom", message, path: ["steps"] });
  });
export type DagDefinition = z.infer<typeof DagDefinition>;

function checkChildDag(dag: unknown): ReturnType<DagCheck> {
  const r = DagDefinition.safeParse(dag);
  return r.success ? { success: true } : { success: false, error: { issues: r.error.issues } };
}
/** The DAG as submitted, before defaults are applied. */
export type DagInput = z.input<typeof DagDefinition>;
