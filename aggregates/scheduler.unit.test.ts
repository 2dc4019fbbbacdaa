import { describe, expect, it } from "vitest";
import { DagDefinition, type DagInput } from "../contracts/index.ts";
import { retryAtAfterFailure, scheduleSteps, topologicalLevels, type StepProgress } from "./scheduler.ts";

const dag = (input: DagInput) => DagDefinition.parse(input);
const progress = (
  p: Partial<{ completed: string[]; running: string[]; failures: [string, { attempt: number; retryAt?: number }][] }>,
): StepProgress => ({
  completed: new Set(p.completed ?? []),
  running: new Set(p.running ?? []),
  failures: new Map(p.failures ?? []),
});
const c = (id: string, dependsOn: string[] = [], retry = { maxAttempts: 1, backoffMs: 0 }) => ({
  id,
  kind: "compute" as const,
  dependsOn,
  retry,
});

// Diamond with an unsorted declaration order: z and a are roots, m depends on both, b on a.
const diamond = dag({ steps: [c("m", ["z", "a"]), c("b", ["a"]), c("z"), c("a")] });

describe("scheduleSteps: ready-step order", () => {
  it("given nothing done, when scheduling, then roots start in step-id order (declaration order is irrelevant)", () => {
    expect(scheduleSteps(diamond, progress({}), 0, 10)).toEqual({
      kind: "continue",
      start: [
        { stepId: "a", attempt: 1 },
        { stepId: "z", attempt: 1 },
      ],
    });
  });

  it("given a and z done, when scheduling, then lower topological level comes before step id", () => {
    const levels = dag({ steps: [c("a"), c("y", ["a"]), c("b", ["y"]), c("x", ["a"])] });
    const d = scheduleSteps(levels, progress({ completed: ["a"] }), 0, 10);
    expect(d).toEqual({
      kind: "continue",
      start: [
        { stepId: "x", attempt: 1 },
        { stepId: "y", attempt: 1 },
      ],
    });
    expect(topologicalLevels(levels.steps)).toEqual(
      new Map([
        ["a", 0],
        ["y", 1],
        ["b", 2],
        ["x", 1],
      ]),
    );
  });

  it("given a dependency not completed, when scheduling, then its dependents never start", () => {
    const d = scheduleSteps(diamond, progress({ completed: ["a"], running: ["z"] }), 0, 10);
    expect(d).toEqual({ kind: "continue", start: [{ stepId: "b", attempt: 1 }] });
  });

  it("given every step completed, when scheduling, then the execution is completed", () => {
    expect(scheduleSteps(diamond, progress({ completed: ["a", "b", "m", "z"] }), 0, 1)).toEqual({ kind: "completed" });
  });

  it("given the same inputs twice, when scheduling, then the decisions are identical (replay re-derives them)", () => {
    const p = progress({ completed: ["a"] });
    expect(scheduleSteps(diamond, p, 5, 2)).toEqual(scheduleSteps(diamond, p, 5, 2));
  });
});

describe("scheduleSteps: parallelism cap", () => {
  const wide = dag({ steps: ["s1", "s2", "s3", "s4", "s5"].map((id) => c(id)) });

  it("given a cap of 2 and nothing running, when scheduling, then only the first 2 ready steps start", () => {
    expect(scheduleSteps(wide, progress({}), 0, 2)).toEqual({
      kind: "continue",
      start: [
        { stepId: "s1", attempt: 1 },
        { stepId: "s2", attempt: 1 },
      ],
    });
  });

  it("given a cap of 2 with 2 running, when scheduling, then nothing more starts", () => {
    expect(scheduleSteps(wide, progress({ running: ["s1", "s2"] }), 0, 2)).toEqual({ kind: "continue", start: [] });
  });

  it("given a cap of 3 with 1 running, when scheduling, then 2 start and the running one is not started twice", () => {
    expect(scheduleSteps(wide, progress({ running: ["s1"] }), 0, 3)).toEqual({
      kind: "continue",
      start: [
        { stepId: "s2", attempt: 1 },
        { stepId: "s3", attempt: 1 },
      ],
    });
  });
});

describe("scheduleSteps: a sleep holds no worker", () => {
  const naps = dag({
    steps: [
      { id: "n1", kind: "sleep", params: { durationMs: 1000 } },
      { id: "n2", kind: "sleep", params: { durationMs: 1000 } },
      c("s1"),
      c("s2"),
    ],
  });

  it("given a cap of 1, when scheduling, then every ready sleep starts besides the one step the cap allows", () => {
    expect(scheduleSteps(naps, progress({}), 0, 1)).toEqual({
      kind: "continue",
      start: [
        { stepId: "n1", attempt: 1 },
        { stepId: "n2", attempt: 1 },
        { stepId: "s1", attempt: 1 },
      ],
    });
  });

  it("given a cap of 1 with two sleeps running, when scheduling, then a step still starts: a sleep does not count against the cap", () => {
    expect(scheduleSteps(naps, progress({ running: ["n1", "n2"] }), 0, 1)).toEqual({
      kind: "continue",
      start: [{ stepId: "s1", attempt: 1 }],
    });
    expect(scheduleSteps(naps, progress({ running: ["n1", "s1"] }), 0, 1)).toEqual({
      kind: "continue",
      start: [{ stepId: "n2", attempt: 1 }],
    });
  });
});

describe("scheduleSteps: retries and backoff", () => {
  const retrying = dag({ steps: [c("a", [], { maxAttempts: 3, backoffMs: 100 }), c("b")] });

  it("given attempt 1 failed with a retry time in the future, when scheduling before it, then the step waits and wakeAt is that time", () => {
    expect(scheduleSteps(retrying, progress({ failures: [["a", { attempt: 1, retryAt: 1100 }]] }), 1000, 4)).toEqual({
      kind: "continue",
      start: [{ stepId: "b", attempt: 1 }],
      wakeAt: 1100,
    });
  });

  it("given attempt 1 failed, when scheduling at its retry time, then attempt 2 starts (the number comes from the journal)", () => {
    expect(
      scheduleSteps(
        retrying,
        progress({ completed: ["b"], failures: [["a", { attempt: 1, retryAt: 1100 }]] }),
        1100,
        4,
      ),
    ).toEqual({ kind: "continue", start: [{ stepId: "a", attempt: 2 }] });
  });

  it("given a step was running when its runtime crashed (no journal record), when a new runtime schedules, then the same attempt runs again: recovery consumes no retry budget", () => {
    const afterCrash = progress({ failures: [["a", { attempt: 1, retryAt: 0 }]] });
    expect(scheduleSteps(retrying, afterCrash, 50, 1)).toEqual({
      kind: "continue",
      start: [{ stepId: "a", attempt: 2 }],
    });
  });

  it("given the last allowed attempt failed, when scheduling, then the execution fails naming the step and attempt", () => {
    expect(scheduleSteps(retrying, progress({ failures: [["a", { attempt: 3 }]] }), 0, 4)).toEqual({
      kind: "failed",
      stepId: "a",
      attempt: 3,
    });
  });

  it("backs off exponentially: backoffMs · 2^(attempt−1), and no retry after maxAttempts", () => {
    const step = { retry: { maxAttempts: 3, backoffMs: 100 } };
    expect(retryAtAfterFailure(step, 1, 1000)).toBe(1100);
    expect(retryAtAfterFailure(step, 2, 1000)).toBe(1200);
    expect(retryAtAfterFailure(step, 3, 1000)).toBeUndefined();
  });
});
