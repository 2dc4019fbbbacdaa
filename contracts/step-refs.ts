import { z } from "zod";

/**
 * The one reference form of step params (docs/sdk.md "Data flow"): an object whose only key is
 * `$ref` is replaced, when the step runs, by the value at its path:
 *
 * - `{"$ref": "input"}` / `{"$ref": "input.a.b"}`: the run's input (or a part of it);
 * - `{"$ref": "steps.<stepId>.output"}` / `{"$ref": "steps.<stepId>.output.body"}`: a dependency's
 *   recorded output (or a part of it); `<stepId>` must be in the step's `dependsOn`;
 * - `{"$ref": "item"}` / `{"$ref": "item.a"}`: in a map step (contracts/map.ts), the item this run of
 *   the step is for.
 *
 * Path segments are property names or array indices (`chunks.0`). An object whose only key is
 * `$secret` names a tenant secret, resolved by the runtime at execution time and never recorded.
 */
export const REF_PATH =
  /^(?:input|item|steps\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.output)(?:\.[A-Za-z0-9_-]{1,128}){0,32}$/;
export const SECRET_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

export const RefValue = z
  .object({
    $ref: z
      .string()
      .max(1024)
      .regex(REF_PATH, "a $ref is input[.path], item[.path] or steps.<dependency>.output[.path]"),
  })
  .strict();
export type RefValue = z.infer<typeof RefValue>;
export const SecretValue = z
  .object({ $secret: z.string().regex(SECRET_NAME, "a secret name is [A-Za-z0-9_.-], at most 128 characters") })
  .strict();
export type SecretValue = z.infer<typeof SecretValue>;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
const soleKey = (v: unknown, key: string): boolean => isObject(v) && Object.keys(v).length === 1 && key in v;
export const isRef = (v: unknown): v is RefValue => soleKey(v, "$ref") && typeof (v as RefValue).$ref === "string";
export const isSecret = (v: unknown): v is SecretValue =>
  soleKey(v, "$secret") && typeof (v as SecretValue).$secret === "string";

/** Every `$ref` path and `$secret` name anywhere in a params value, in document order. */
export function collectRefs(value: unknown): { refs: string[]; secrets: string[] } {
  const found = { refs: [] as string[], secrets: [] as string[] };
  walkRefs(value, found);
  return found;
}

// A plain recursive function, not a closure made per call: every event decode that carries a DAG
// (each service reads every `run.submitted`) walks every step's params here.
function walkRefs(v: unknown, found: { refs: string[]; secrets: string[] }): void {
  if (v === null || typeof v !== "object") return;
  if (Array.isArray(v)) {
    for (const x of v) walkRefs(x, found);
    return;
  }
  if (isRef(v)) found.refs.push(v.$ref);
  else if (isSecret(v)) found.secrets.push(v.$secret);
  else for (const k in v) if (Object.hasOwn(v, k)) walkRefs((v as Record<string, unknown>)[k], found);
}

/** The step a `steps.<id>.output…` path names, or undefined for an `input…` or `item…` path. */
export const refStep = (path: string): string | undefined =>
  path.startsWith("steps.") ? path.split(".")[1] : undefined;

/** Problems with a step's references, each naming the step: bad paths and references to non-dependencies. */
export function refIssues(step: { id: string; dependsOn: readonly string[]; params?: unknown }): string[] {
  const issues: string[] = [];
  for (const ref of collectRefs(step.params).refs) {
    if (!REF_PATH.test(ref)) {
      issues.push(`step "${step.id}" has an invalid reference "${ref}"`);
      continue;
    }
    const dep = refStep(ref);
    if (dep !== undefined && !step.dependsOn.includes(dep))
      issues.push(`step "${step.id}" references "${ref}" but does not depend on step "${dep}"`);
  }
  return issues;
}

/** What references resolve against: the run's input and the recorded outputs of completed steps. */
export interface RefScope {
  readonly input: unknown;
  readonly outputs: ReadonlyMap<string, unknown>;
  /** A map step's item (only map items resolve `item` references). */
  readonly item?: unknown;
}

/** The value at a reference path, or undefined when the path leads nowhere. */
export function lookupRef(path: string, scope: RefScope): unknown {
  const parts = path.split(".");
  let at: unknown;
  let rest: string[];
  if (parts[0] === "input" || parts[0] === "item") {
    at = parts[0] === "input" ? scope.input : scope.item;
    rest = parts.slice(1);
  } else {
    at = scope.outputs.get(parts[1]!);
    rest = parts.slice(3);
  }
  for (const p of rest) {
    if (Array.isArray(at) && /^\d+$/.test(p)) at = at[Number(p)];
    else if (isObject(at) && Object.hasOwn(at, p)) at = at[p];
    else return undefined;
  }
  return at;
}

/**
 * Replaces every `$ref` in `value` by what it names, and every `$secret` by `secret(name)`.
 * Throws an Error naming the reference when one resolves to nothing (the step's inputs are wrong:
 * retrying cannot help, so callers fail the attempt without retry).
 */
export function resolveRefs(value: unknown, scope: RefScope, secret: (name: string) => string): unknown {
  if (isRef(value)) {
    const v = lookupRef(value.$ref, scope);
    if (v === undefined) throw new Error(`reference "${value.$ref}" resolves to nothing`);
    return v;
  }
  if (isSecret(value)) return secret(value.$secret);
  if (Array.isArray(value)) return value.map((v) => resolveRefs(v, scope, secret));
  if (isObject(value))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveRefs(v, scope, secret)]));
  return value;
}
