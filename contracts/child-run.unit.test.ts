import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { DagDefinition } from "./dag.ts";
import { MAX_RUN_NESTING, childRunKey, runNesting } from "./child-run.ts";
import { submissionIds } from "../platform/submission-ids.ts";

// Pure: the run step's schema and submission checks (no transport).
const issuesOf = (input: unknown) => {
  const r = DagDefinition.safeParse(input);
  return r.success ? [] : r.error.issues.map((i) => i.message);
};
const leaf = { steps: [{ id: "leaf", kind: "compute" }] };
const nest = (depth: number): unknown =>
  depth === 0 ? leaf : { steps: [{ id: `level-${depth}`, kind: "run", dag: nest(depth - 1) }] };

describe("run steps in a DAG (child runs)", () => {
  it("a run step parses with its defaults: onParentCancel cancel, params {} as the child's input", () => {
    const dag = DagDefinition.parse({ steps: [{ id: "sub", kind: "run", dag: leaf }] });
    expect(dag.steps[0]).toMatchObject({ kind: "run", onParentCancel: "cancel", params: {}, dag: leaf });
    const abandon = DagDefinition.parse({ steps: [{ id: "sub", kind: "run", dag: leaf, onParentCancel: "abandon" }] });
    expect(abandon.steps[0]).toMatchObject({ onParentCancel: "abandon" });
  });

  it("a child DAG is validated like a top-level one: its issues name the run step", () => {
    const cyclic = {
      steps: [
        { id: "a", kind: "compute", dependsOn: ["b"] },
        { id: "b", kind: "compute", dependsOn: ["a"] },
      ],
    };
    expect(issuesOf({ steps: [{ id: "outer", kind: "run", dag: cyclic }] })).toEqual([
      expect.stringMatching(/^run step "outer" child DAG: dag\.steps: dependency cycle: a -> b -> a$/),
    ]);
    expect(issuesOf({ steps: [{ id: "outer", kind: "run", dag: { steps: [] } }] })[0]).toMatch(
      /run step "outer" child DAG: dag\.steps: a DAG needs at least one step/,
    );
    expect(issuesOf({ steps: [{ id: "outer", kind: "run", dag: { steps: [{ id: "x", kind: "nope" }] } }] })[0]).toMatch(
      /run step "outer" child DAG: dag\.steps\.0\.kind/,
    );
  });

  it(`run steps nest at most ${MAX_RUN_NESTING} levels: 3 parses, 4 is refused`, () => {
    expect(runNesting((nest(3) as { steps: unknown[] }).steps)).toBe(3);
    expect(issuesOf(nest(MAX_RUN_NESTING))).toEqual([]);
    expect(issuesOf(nest(MAX_RUN_NESTING + 1))).toEqual([
      `run steps nest ${MAX_RUN_NESTING + 1} levels deep here, more than the ${MAX_RUN_NESTING} allowed`,
    ]);
  });

  it("a run step's params take $ref like any step's (checked against its dependencies) but no $secret, and it cannot be a map", () => {
    expect(
      issuesOf({ steps: [{ id: "sub", kind: "run", dag: leaf, params: { n: { $ref: "steps.x.output" } } }] }),
    ).toEqual([expect.stringMatching(/does not depend on step "x"/)]);
    expect(issuesOf({ steps: [{ id: "sub", kind: "run", dag: leaf, params: { k: { $secret: "key" } } }] })).toEqual([
      expect.stringMatching(/run step "sub" has a \$secret in its params/),
    ]);
    expect(
      issuesOf({ steps: [{ id: "sub", kind: "run", dag: leaf, map: { over: "input.items" }, params: {} }] }),
    ).toEqual([expect.stringMatching(/run step "sub" cannot be a map step/)]);
    // The child's own references are the child's: they are not checked against the parent's steps.
    const child = { steps: [{ id: "c", kind: "http", params: { url: { $ref: "input.url" } } }] };
    expect(issuesOf({ steps: [{ id: "sub", kind: "run", dag: child }] })).toEqual([]);
  });

  it("the child run id derives from (tenant, execution, step, attempt) only: a resumed execution names the same child", () => {
    const id = (tenant: string, exec: string, step: string, attempt: number) =>
      submissionIds(tenant, childRunKey(exec, step, attempt), () => "never").sharedRunId;
    expect(id("acme", "ex-1", "sub", 1)).toBe(id("acme", "ex-1", "sub", 1));
    expect(
      new Set([
        id("acme", "ex-1", "sub", 1),
        id("acme", "ex-1", "sub", 2),
        id("acme", "ex-2", "sub", 1),
        id("acme", "ex-1", "other", 1),
        id("globex", "ex-1", "sub", 1),
      ]).size,
    ).toBe(5);
    const hex = createHash("sha256").update("4:acme:child:ex-1:sub").digest("hex");
    expect(id("acme", "ex-1", "sub", 1)).toBe(`run-${hex.slice(0, 59)}`);
  });
});
