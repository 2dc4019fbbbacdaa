import { z } from "zod";
import { Environment, type ASTNode } from "@marcbachmann/cel-js";

/**
 * Step conditions (docs/control-flow.md): a step's `when` is a CEL expression (Common Expression
 * Language: non-Turing-complete, no side effects, bounded size; evaluated by an interpreter, never
 * `eval`/`Function`) over two variables:
 *
 * - `input`: the run's input (JSON; numbers are CEL doubles);
 * - `steps`: one entry per dependency, `steps.<id>` or `steps["<id>"]`, holding
 *   `{ state: "completed", output }` or `{ state: "skipped" }`.
 *
 * It must type-check to `bool` (or `dyn`) and name only the step's dependencies.
 */
export const CONDITION_MAX_CHARS = 2048;
export const Condition = z.string().min(1).max(CONDITION_MAX_CHARS);

/**
 * When a step with dependencies runs (its `when` is then evaluated): `all-completed` (the default)
 * when every dependency completed, and it is skipped when one was skipped; `all-done` once every
 * dependency completed or was skipped; `any` once every dependency completed or was skipped and at
 * least one completed (skipped when all were skipped).
 */
export const Trigger = z.enum(["all-completed", "all-done", "any"]);
export type Trigger = z.infer<typeof Trigger>;

const env = new Environment({
  unlistedVariablesAreDyn: false,
  homogeneousAggregateLiterals: false,
  limits: { maxAstNodes: 512, maxDepth: 32, maxListElements: 256, maxMapEntries: 256, maxCallArguments: 16 },
})
  .registerVariable("input", "dyn")
  .registerVariable("steps", "map<string, dyn>");

const firstLine = (e: unknown): string => (e instanceof Error ? e.message : String(e)).split("\n")[0]!.slice(0, 500);

/** The step ids an expression names under `steps`, or the first misuse of `steps` (it must be `steps.<id>` or `steps["<id>"]`). */
function stepsNamed(node: ASTNode): { ids: string[]; misuse?: string } {
  const ids: string[] = [];
  let misuse: string | undefined;
  const isSteps = (n: unknown) => (n as ASTNode | undefined)?.op === "id" && (n as ASTNode).args === "steps";
  const walk = (n: ASTNode): void => {
    if ((n.op === "." || n.op === ".?") && isSteps(n.args[0])) return void ids.push(n.args[1]);
    if ((n.op === "[]" || n.op === "[?]") && isSteps(n.args[0])) {
      const key = n.args[1];
      if (key.op === "value" && typeof key.args === "string") return void ids.push(key.args);
      misuse ??= "steps may only be indexed by a literal step id";
      return;
    }
    if (isSteps(n)) misuse ??= 'steps may only be used as steps.<id> or steps["<id>"]';
    const args: unknown = n.args;
    const children = Array.isArray(args) ? args.flat(2) : [];
    for (const c of children) if (c && typeof c === "object" && "op" in c) walk(c as ASTNode);
  };
  walk(node);
  return misuse === undefined ? { ids } : { ids, misuse };
}

/** Problems with a step's `when`, each naming the step: syntax, type, unknown variables, non-dependencies. */
export function conditionIssues(step: { id: string; dependsOn: readonly string[]; when?: string }): string[] {
  if (step.when === undefined) return [];
  const at = `step "${step.id}" condition`;
  let parsed: ReturnType<Environment["parse"]>;
  try {
    parsed = env.parse(step.when);
  } catch (e) {
    return [`${at} does not parse: ${firstLine(e)}`];
  }
  const checked = parsed.check();
  if (!checked.valid) return [`${at} does not type-check: ${firstLine(checked.error)}`];
  if (checked.type !== "bool" && checked.type !== "dyn") return [`${at} is of type ${checked.type}, not bool`];
  const { ids, misuse } = stepsNamed(parsed.ast);
  const issues = misuse ? [`${at}: ${misuse}`] : [];
  for (const id of new Set(ids))
    if (!step.dependsOn.includes(id)) issues.push(`${at} reads steps.${id} but does not depend on step "${id}"`);
  return issues;
}

/** A dependency as a condition sees it. */
export type ConditionDep = { readonly state: "completed"; readonly output: unknown } | { readonly state: "skipped" };

export type ConditionResult =
  { readonly ok: true; readonly value: boolean } | { readonly ok: false; readonly error: string };

/**
 * Evaluates a validated condition. Pure and deterministic given the run input and the dependencies'
 * recorded outputs; never throws: an evaluation error (e.g. a key missing from the input) or a
 * non-boolean result is `{ ok: false }`.
 */
export function evaluateCondition(
  when: string,
  input: unknown,
  deps: ReadonlyMap<string, ConditionDep>,
): ConditionResult {
  try {
    const value: unknown = env.evaluate(when, { input: input ?? null, steps: Object.fromEntries(deps) });
    if (typeof value === "boolean") return { ok: true, value };
    return { ok: false, error: `the condition evaluated to ${typeof value}, not a boolean` };
  } catch (e) {
    return { ok: false, error: firstLine(e) };
  }
}
