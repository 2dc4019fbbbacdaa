import { describe, expect, it } from "vitest";
import { conditionIssues, DagDefinition, evaluateCondition, type ConditionDep } from "./index.ts";

const step = (when: string, dependsOn: string[] = ["a"]) => ({ id: "s", dependsOn, when });
const deps = (entries: [string, ConditionDep][] = []) => new Map(entries);

describe("conditionIssues: a when is refused at submission unless it parses, type-checks to bool and names only dependencies", () => {
  it("accepts conditions over input and a dependency's output, by field or by literal index", () => {
    expect(conditionIssues(step('input.region == "eu" && steps.a.output.score >= 0.5'))).toEqual([]);
    expect(conditionIssues(step('steps["a-b"].state == "skipped"', ["a-b"]))).toEqual([]);
    expect(conditionIssues(step("has(input.flag) && input.flag", []))).toEqual([]);
    expect(conditionIssues({ id: "s", dependsOn: [] })).toEqual([]);
  });

  it.each([
    ["input.x ==", "does not parse"],
    ["foo > 1", "does not type-check: Unknown variable: foo"],
    ['"yes"', "is of type string, not bool"],
    ["steps.b.output > 1.0", 'reads steps.b but does not depend on step "b"'],
    ['steps[input.name].state == "completed"', "steps may only be indexed by a literal step id"],
    ["size(steps) > 0", 'steps may only be used as steps.<id> or steps["<id>"]'],
  ])("refuses %j: %s", (when, message) => {
    const issues = conditionIssues(step(when));
    expect(issues).toHaveLength(1);
    expect(issues[0]).toContain('step "s" condition');
    expect(issues[0]).toContain(message);
  });

  it("DagDefinition carries the issue with the step's id (the API answers it as dag-invalid)", () => {
    const r = DagDefinition.safeParse({
      steps: [
        { id: "a", kind: "compute" },
        { id: "b", kind: "compute", dependsOn: ["a"], when: "steps.c.output == null" },
        { id: "c", kind: "compute", trigger: "sometimes" },
      ],
    });
    expect(r.success).toBe(false);
    const messages = r.error!.issues.map((i) => i.message).join("\n");
    expect(messages).toMatch(/trigger|Invalid option/);
    const ok = DagDefinition.safeParse({
      steps: [
        { id: "a", kind: "compute" },
        { id: "b", kind: "compute", dependsOn: ["a"], when: "steps.c.output == null" },
      ],
    });
    expect(ok.error?.issues.map((i) => i.message)).toEqual([
      'step "b" condition reads steps.c but does not depend on step "c"',
    ]);
  });
});

describe('map at submission (docs/control-flow.md "Map"; pure schema checks, no transport)', () => {
  const messages = (dag: unknown) => {
    const r = DagDefinition.safeParse(dag);
    return r.success ? "" : r.error.issues.map((i) => i.message).join("\n");
  };
  it("a map inside a map is refused (dag-invalid), not half-run", () => {
    const dag = {
      steps: [{ id: "each", kind: "compute", map: { over: "input.items", map: { over: "item" } } }],
    };
    expect(messages(dag)).toContain('Unrecognized key: "map"');
  });
  it("a map over a non-dependency, an item reference outside a map, and an id reserved for an item are refused", () => {
    expect(
      messages({
        steps: [
          { id: "a", kind: "compute" },
          { id: "m", kind: "compute", map: { over: "steps.a.output" } },
        ],
      }),
    ).toContain('map step "m" maps over "steps.a.output" but does not depend on step "a"');
    expect(messages({ steps: [{ id: "c", kind: "custom", handler: "h", params: { x: { $ref: "item" } } }] })).toContain(
      'step "c" references "item" but is not a map step',
    );
    expect(
      messages({
        steps: [
          { id: "m", kind: "compute", map: { over: "input" } },
          { id: "m--2", kind: "compute" },
        ],
      }),
    ).toContain('step id "m--2" is reserved for an item of map step "m"');
  });
  it("a sound map parses with its defaults (maxConcurrency 10, toleratedFailures 0) and a percentage", () => {
    const r = DagDefinition.parse({
      steps: [
        { id: "split", kind: "compute" },
        {
          id: "each",
          kind: "custom",
          handler: "h",
          dependsOn: ["split"],
          map: { over: "steps.split.output.chunks" },
          params: { $ref: "item" },
        },
        { id: "pct", kind: "compute", map: { over: "input.items", toleratedFailures: "10%" } },
      ],
    });
    expect(r.steps[1]!.map).toEqual({ over: "steps.split.output.chunks", maxConcurrency: 10, toleratedFailures: 0 });
    expect(r.steps[2]!.map!.toleratedFailures).toBe("10%");
  });
});

describe("evaluateCondition: pure, deterministic, never throws", () => {
  it("decides over the run input and the dependencies as completed (with output) or skipped", () => {
    const d = deps([
      ["a", { state: "completed", output: { score: 0.7, tags: ["x"] } }],
      ["b", { state: "skipped" }],
    ]);
    expect(evaluateCondition('input.region == "eu" && steps.a.output.score > 0.5', { region: "eu" }, d)).toEqual({
      ok: true,
      value: true,
    });
    expect(evaluateCondition('steps.b.state == "completed"', null, d)).toEqual({ ok: true, value: false });
    expect(evaluateCondition('"x" in steps.a.output.tags', null, d)).toEqual({ ok: true, value: true });
    expect(evaluateCondition("input.count > 3", { count: 3 }, d)).toEqual({ ok: true, value: false });
  });

  it("an evaluation error (a missing key, a run-time type mismatch, a non-boolean) is a result, not a throw", () => {
    const missing = evaluateCondition("input.missing == 1.0", {}, deps());
    expect(missing).toMatchObject({ ok: false, error: expect.stringContaining("missing") });
    expect(evaluateCondition("input.x + 1 > 2", { x: 1 }, deps())).toMatchObject({ ok: false });
    expect(evaluateCondition("input", "text", deps())).toEqual({
      ok: false,
      error: "the condition evaluated to string, not a boolean",
    });
  });
});
