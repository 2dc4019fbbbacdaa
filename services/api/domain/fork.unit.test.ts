import { describe, expect, it } from "vitest";
import { foldExecution } from "../../../aggregates/execution.ts";
import { initialRunState, type RunState } from "../../../aggregates/run.ts";
import { DagDefinition, type DroverError, type SharedRunId } from "../../../contracts/index.ts";
import { downstreamOf, mergePatch, planFork, upstreamOf } from "./fork.ts";

// Pure fork planning and merge patch over in-memory states: proves no transport.
const dag = DagDefinition.parse({
  name: "d",
  steps: [
    { id: "a", kind: "compute" },
    { id: "b", kind: "compute", dependsOn: ["a"] },
    { id: "side", kind: "compute", dependsOn: ["a"] },
    { id: "c", kind: "compute", dependsOn: ["b"] },
    { id: "d", kind: "compute", dependsOn: ["c", "side"] },
  ],
});
const digest = (c: string) => c.repeat(64);
const journal = (done: string[]) =>
  ({
    ...foldExecution([]),
    completed: new Map(
      done.map((id, i) => [id, { attempt: 1, output: {}, outputDigest: digest(String(i)), seq: i + 2 }]),
    ),
  }) as ReturnType<typeof foldExecution>;
const run = (status: RunState["status"]): RunState => ({
  ...initialRunState(),
  status,
  sharedRunId: "run-1" as SharedRunId,
  dag,
  executionId: "exec-1" as RunState["executionId"],
});
const code = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as DroverError).code;
  }
  return "none";
};

describe("fork planning (pure, no transport)", () => {
  it("reuses completed steps not downstream of fromStep, in DAG order, with their digests", () => {
    const plan = planFork(run("failed"), journal(["a", "b", "side"]), "c");
    expect(plan.reuse).toEqual([
      { stepId: "a", outputDigest: digest("0") },
      { stepId: "b", outputDigest: digest("1") },
      { stepId: "side", outputDigest: digest("2") },
    ]);
    expect(plan).toMatchObject({ sharedRunId: "run-1", executionId: "exec-1", fromStep: "c" });
  });
  it("executes a sibling branch that did not complete, and reuses nothing downstream of fromStep", () => {
    expect(planFork(run("failed"), journal(["a", "b", "c"]), "b").reuse.map((r) => r.stepId)).toEqual(["a"]);
    expect(downstreamOf(dag, "b")).toEqual(new Set(["b", "c", "d"]));
    expect(upstreamOf(dag, "d")).toEqual(new Set(["c", "side", "b", "a"]));
  });
  it("refuses an unknown step (fork-invalid), an unfinished run (run-not-ended), missing upstream outputs (fork-upstream-incomplete)", () => {
    expect(code(() => planFork(run("failed"), journal(["a"]), "zz"))).toBe("fork-invalid");
    expect(code(() => planFork(run("started"), journal(["a"]), "b"))).toBe("run-not-ended");
    expect(code(() => planFork(run("failed"), journal(["a"]), "c"))).toBe("fork-upstream-incomplete");
    expect(() => planFork(run("failed"), journal(["a"]), "d")).toThrow(/b, c|c, side|side/);
  });
});

describe("JSON merge patch RFC 7386 (pure)", () => {
  it("merges objects, deletes on null, replaces scalars and arrays", () => {
    expect(mergePatch({ a: 1, b: { c: 2, d: 3 }, e: [1] }, { b: { c: null, x: 1 }, e: [2], f: "n" })).toEqual({
      a: 1,
      b: { d: 3, x: 1 },
      e: [2],
      f: "n",
    });
    expect(mergePatch({ a: 1 }, "s")).toBe("s");
    expect(mergePatch(null, { a: { b: null } })).toEqual({ a: {} });
  });
});
