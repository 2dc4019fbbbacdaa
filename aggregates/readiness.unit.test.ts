import { describe, expect, it } from "vitest";
import { DagDefinition, type DagInput } from "../contracts/index.ts";
import { scheduleSteps } from "./scheduler.ts";

// Pure: the scheduler's control-flow decisions (skips, condition evaluations, triggers).
const dag = (input: DagInput) => DagDefinition.parse(input);
const run = (
  d: DagDefinition,
  p: { completed?: string[]; skipped?: string[]; conditions?: [string, boolean][]; running?: string[] },
) =>
  scheduleSteps(
    d,
    {
      completed: new Set(p.completed ?? []),
      failures: new Map(),
      running: new Set(p.running ?? []),
      skipped: new Set(p.skipped ?? []),
      conditions: new Map(p.conditions ?? []),
    },
    0,
    10,
  );

const gated = dag({
  steps: [
    { id: "a", kind: "compute" },
    { id: "gate", kind: "compute", dependsOn: ["a"], when: "input.go" },
    { id: "after", kind: "compute", dependsOn: ["gate"] },
    { id: "done", kind: "compute", dependsOn: ["gate", "a"], trigger: "all-done" },
    { id: "any", kind: "compute", dependsOn: ["gate", "a"], trigger: "any" },
    { id: "none", kind: "compute", dependsOn: ["gate"], trigger: "any" },
  ],
});

describe("scheduleSteps: conditions and triggers", () => {
  it("a step with when is offered for evaluation (not started) once its dependencies settled", () => {
    expect(run(gated, {})).toEqual({ kind: "continue", start: [{ stepId: "a", attempt: 1 }] });
    expect(run(gated, { completed: ["a"] })).toEqual({ kind: "continue", start: [], evaluate: ["gate"] });
    expect(run(gated, { completed: ["a"], conditions: [["gate", true]] })).toEqual({
      kind: "continue",
      start: [{ stepId: "gate", attempt: 1 }],
    });
  });

  it("a condition recorded false skips the step; then default-trigger dependents are skipped, all-done and any run, any with all skipped is skipped", () => {
    const first = run(gated, { completed: ["a"], conditions: [["gate", false]] });
    expect(first).toEqual({
      kind: "continue",
      start: [],
      skip: [{ stepId: "gate", reason: "condition-false", detail: "condition was false: input.go" }],
    });
    const next = run(gated, { completed: ["a"], conditions: [["gate", false]], skipped: ["gate"] });
    expect(next).toEqual({
      kind: "continue",
      start: [
        { stepId: "any", attempt: 1 },
        { stepId: "done", attempt: 1 },
      ],
      skip: [
        {
          stepId: "after",
          reason: "dependency-skipped",
          detail: "dependency gate was skipped (trigger all-completed)",
        },
        { stepId: "none", reason: "dependency-skipped", detail: "every dependency (gate) was skipped (trigger any)" },
      ],
    });
  });

  it("an execution whose every step completed or was skipped is completed", () => {
    const all = { completed: ["a", "any", "done"], skipped: ["gate", "after", "none"] };
    expect(run(gated, all)).toEqual({ kind: "completed" });
    expect(run(gated, { ...all, completed: ["a", "any"] }).kind).toBe("continue");
  });

  it("a step waits while a dependency is still running, whatever its trigger", () => {
    expect(run(gated, { completed: ["a"], running: ["gate"], conditions: [["gate", true]] })).toEqual({
      kind: "continue",
      start: [],
    });
  });
});
