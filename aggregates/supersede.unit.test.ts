import { describe, expect, it } from "vitest";
import { DagDefinition, type DagInput } from "../contracts/index.ts";
import { scheduleSteps } from "./scheduler.ts";

// Pure: the scheduler's `superseded` skips of open waits under trigger `any` (no transport).
const dag = (input: DagInput) => DagDefinition.parse(input);
const wait = (id: string, dependsOn: string[] = []) =>
  ({ id, kind: "wait", dependsOn, params: { name: id, timeoutMs: 60_000 } }) as const;
const run = (d: DagDefinition, p: { completed?: string[]; skipped?: string[]; running?: string[] }) =>
  scheduleSteps(
    d,
    {
      completed: new Set(p.completed ?? []),
      failures: new Map(),
      running: new Set(p.running ?? []),
      skipped: new Set(p.skipped ?? []),
      conditions: new Map(),
    },
    0,
    10,
  );

const race = dag({
  steps: [
    wait("approve"),
    wait("reject"),
    { id: "join", kind: "compute", dependsOn: ["approve", "reject"], trigger: "any" },
  ],
});

describe("scheduleSteps: trigger any goes on the first resolved wait and supersedes the others", () => {
  it("a wait resolved while the other listens: the other is skipped superseded, then the any step starts", () => {
    expect(run(race, { completed: ["approve"], running: ["reject"] })).toEqual({
      kind: "continue",
      start: [],
      skip: [{ stepId: "reject", reason: "superseded", detail: "join went on approve (trigger any)" }],
    });
    expect(run(race, { completed: ["approve"], skipped: ["reject"] })).toEqual({
      kind: "continue",
      start: [{ stepId: "join", attempt: 1 }],
    });
    expect(run(race, { completed: ["approve", "join"], skipped: ["reject"] })).toEqual({ kind: "completed" });
  });

  it("nothing is superseded before a dependency completed, nor under the default trigger", () => {
    expect(run(race, { running: ["approve", "reject"] })).toEqual({ kind: "continue", start: [] });
    const all = dag({
      steps: [wait("approve"), wait("reject"), { id: "join", kind: "compute", dependsOn: ["approve", "reject"] }],
    });
    expect(run(all, { completed: ["approve"], running: ["reject"] })).toEqual({ kind: "continue", start: [] });
  });

  it("a wait another step still needs stays open, and the any step waits for it", () => {
    const d = dag({
      steps: [
        wait("approve"),
        wait("reject"),
        { id: "join", kind: "compute", dependsOn: ["approve", "reject"], trigger: "any" },
        { id: "audit", kind: "compute", dependsOn: ["reject"] },
      ],
    });
    expect(run(d, { completed: ["approve"], running: ["reject"] })).toEqual({ kind: "continue", start: [] });
  });

  it("an unsettled dependency that is not a wait is waited for (a running step is never dropped)", () => {
    const d = dag({
      steps: [
        wait("approve"),
        { id: "score", kind: "compute" },
        { id: "join", kind: "compute", dependsOn: ["approve", "score"], trigger: "any" },
      ],
    });
    expect(run(d, { completed: ["approve"], running: ["score"] })).toEqual({ kind: "continue", start: [] });
  });

  it("a wait not yet open (its own dependency runs) is superseded too, and never started", () => {
    const d = dag({
      steps: [
        { id: "prep", kind: "compute" },
        wait("approve"),
        wait("late", ["prep"]),
        { id: "join", kind: "compute", dependsOn: ["approve", "late"], trigger: "any" },
      ],
    });
    expect(run(d, { completed: ["approve", "prep"] })).toEqual({
      kind: "continue",
      start: [],
      skip: [{ stepId: "late", reason: "superseded", detail: "join went on approve (trigger any)" }],
    });
  });

  it("a wait shared by two any steps is superseded only once both can go without it", () => {
    const d = dag({
      steps: [
        wait("a"),
        wait("b"),
        wait("c"),
        { id: "j1", kind: "compute", dependsOn: ["a", "b"], trigger: "any" },
        { id: "j2", kind: "compute", dependsOn: ["c", "b"], trigger: "any" },
      ],
    });
    const first = run(d, { completed: ["a"], running: ["b", "c"] });
    expect(first).toEqual({ kind: "continue", start: [] });
    expect(run(d, { completed: ["a", "c"], running: ["b"] })).toEqual({
      kind: "continue",
      start: [],
      skip: [{ stepId: "b", reason: "superseded", detail: "j1 went on a (trigger any)" }],
    });
  });
});
