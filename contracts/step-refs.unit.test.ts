import { describe, expect, it } from "vitest";
import { DagDefinition, requiredStepKinds } from "./dag.ts";
import { collectRefs, lookupRef, refIssues, resolveRefs } from "./step-refs.ts";

/** Pure functions only: no transport. */
describe("step references ($ref/$secret) and custom kinds in the DAG contract (pure, proves no transport)", () => {
  const scope = {
    input: { doc: { url: "http://x/y" }, list: ["a", "b"] },
    outputs: new Map<string, unknown>([["fetch", { body: "text", nested: [[1, 2]] }]]),
  };

  it("resolves input and dependency-output paths, array indices included, and secrets through the given resolver", () => {
    const value = {
      url: { $ref: "input.doc.url" },
      first: { $ref: "input.list.1" },
      body: { $ref: "steps.fetch.output.body" },
      deep: { $ref: "steps.fetch.output.nested.0.1" },
      whole: { $ref: "steps.fetch.output" },
      headers: { authorization: { $secret: "api-key" } },
      plain: [1, { keep: true }],
    };
    expect(resolveRefs(value, scope, (n) => `value-of-${n}`)).toEqual({
      url: "http://x/y",
      first: "b",
      body: "text",
      deep: 2,
      whole: { body: "text", nested: [[1, 2]] },
      headers: { authorization: "value-of-api-key" },
      plain: [1, { keep: true }],
    });
  });

  it("refuses a path that leads nowhere, naming the reference", () => {
    expect(lookupRef("input.missing.x", scope)).toBeUndefined();
    expect(() => resolveRefs({ a: { $ref: "steps.fetch.output.nope" } }, scope, () => "")).toThrow(
      'reference "steps.fetch.output.nope" resolves to nothing',
    );
  });

  it("an object with other keys beside $ref is data, not a reference", () => {
    const v = { $ref: "input.doc", other: 1 };
    expect(collectRefs(v).refs).toEqual([]);
    expect(resolveRefs(v, scope, () => "")).toEqual(v);
  });

  it("a reference to a step that is not a dependency, or a malformed path, is a dag issue naming the step", () => {
    expect(refIssues({ id: "b", dependsOn: ["a"], params: { x: { $ref: "steps.c.output" } } })).toEqual([
      'step "b" references "steps.c.output" but does not depend on step "c"',
    ]);
    expect(refIssues({ id: "b", dependsOn: [], params: { x: { $ref: "outputs.c" } } })).toEqual([
      'step "b" has an invalid reference "outputs.c"',
    ]);
    const r = DagDefinition.safeParse({
      steps: [
        { id: "a", kind: "compute" },
        { id: "b", kind: "http", params: { url: { $ref: "steps.a.output.url" } } },
      ],
    });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.message)).toContain(
      'step "b" references "steps.a.output.url" but does not depend on step "a"',
    );
  });

  it("custom steps name a handler; the DAG's required kinds are its built-in kinds and custom:<handler>", () => {
    const dag = DagDefinition.parse({
      steps: [
        { id: "a", kind: "http", params: { url: "http://127.0.0.1/x" } },
        { id: "b", kind: "custom", handler: "chunk-text", dependsOn: ["a"], params: { t: { $ref: "steps.a.output" } } },
        { id: "c", kind: "custom", handler: "chunk-text", dependsOn: ["b"] },
      ],
    });
    expect(requiredStepKinds(dag)).toEqual(["custom:chunk-text", "http"]);
    expect(DagDefinition.safeParse({ steps: [{ id: "a", kind: "custom", handler: "Bad Name" }] }).success).toBe(false);
    expect(DagDefinition.safeParse({ steps: [{ id: "a", kind: "custom" }] }).success).toBe(false);
  });

  it("llm credentials are secret references only: a literal key is refused", () => {
    const llm = (apiKey: unknown) =>
      DagDefinition.safeParse({ steps: [{ id: "a", kind: "llm", params: { model: "m", prompt: "p", apiKey } }] })
        .success;
    expect(llm({ $secret: "openai-api-key" })).toBe(true);
    expect(llm("sk-literal")).toBe(false);
  });
});
