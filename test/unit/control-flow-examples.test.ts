import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { DagDefinition, evaluateCondition, type ConditionDep } from "../../contracts/index.ts";
import { scheduleSteps } from "../../aggregates/scheduler.ts";

// Pure: the example DAG parses and, driven by the scheduler with every step succeeding at once,
// takes the branch its input chooses. Proves the example's conditions, not any runtime or transport.
const dag = DagDefinition.parse(
  JSON.parse(readFileSync(resolve(import.meta.dirname, "../../examples/control-flow/dag.json"), "utf8")),
);

function drive(input: unknown): { ran: string[]; skipped: Map<string, string> } {
  const completed = new Set<string>();
  const skipped = new Map<string, string>();
  const conditions = new Map<string, boolean>();
  const ran: string[] = [];
  for (let i = 0; i < 50; i++) {
    const d = scheduleSteps(
      dag,
      { completed, failures: new Map(), running: new Set(), skipped: new Set(skipped.keys()), conditions },
      0,
      10,
    );
    if (d.kind === "completed") return { ran, skipped };
    if (d.kind === "failed") throw new Error(`failed at ${d.stepId}`);
    for (const s of d.skip ?? []) skipped.set(s.stepId, s.reason);
    for (const id of d.evaluate ?? []) {
      const step = dag.steps.find((s) => s.id === id)!;
      const deps = new Map<string, ConditionDep>(
        step.dependsOn.map((x) => [x, skipped.has(x) ? { state: "skipped" } : { state: "completed", output: {} }]),
      );
      const r = evaluateCondition(step.when!, input, deps);
      if (!r.ok) throw new Error(r.error);
      conditions.set(id, r.value);
    }
    for (const s of d.start) {
      completed.add(s.stepId);
      ran.push(s.stepId);
    }
  }
  throw new Error("did not finish");
}

describe("examples/control-flow/dag.json", () => {
  it("a large EU order takes the review branch: fast-path is skipped by its condition, join (any) and audit (all-done) run", () => {
    const { ran, skipped } = drive({ region: "eu", amount: 1500 });
    expect(ran).toEqual(["classify", "eu-review", "eu-archive", "audit", "join"]);
    expect([...skipped]).toEqual([["fast-path", "condition-false"]]);
  });

  it("any other order takes the fast path: the review, its archive (dependency skipped) and the audit (condition) are skipped", () => {
    const { ran, skipped } = drive({ region: "us", amount: 1500 });
    expect(ran).toEqual(["classify", "fast-path", "join"]);
    expect([...skipped]).toEqual([
      ["eu-review", "condition-false"],
      ["eu-archive", "dependency-skipped"],
      ["audit", "condition-false"],
    ]);
  });
});

describe("examples/control-flow-child/dag.json", () => {
  it("parses: its run step carries a child DAG that is itself valid (a map over the child's input)", () => {
    const parent = DagDefinition.parse(
      JSON.parse(readFileSync(resolve(import.meta.dirname, "../../examples/control-flow-child/dag.json"), "utf8")),
    );
    const run = parent.steps.find((s) => s.kind === "run");
    expect(run).toMatchObject({ id: "per-region", onParentCancel: "cancel" });
    const child = DagDefinition.parse(run!.kind === "run" ? run!.dag : undefined);
    expect(child.steps.map((s) => s.id)).toEqual(["load", "each"]);
    expect(child.steps[1]!.map).toMatchObject({ over: "input.items", maxConcurrency: 2 });
  });
});
