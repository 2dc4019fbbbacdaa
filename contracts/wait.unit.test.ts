import { describe, expect, it } from "vitest";
import { DagDefinition } from "./dag.ts";
import { mayResolve, payloadChecker } from "./wait.ts";

// Pure submission checks and resolver/payload rules of wait steps: these prove no transport.
const approval = {
  name: "approval",
  timeoutMs: 60_000,
  schema: {
    type: "object",
    properties: { approved: { type: "boolean" }, note: { type: "string", maxLength: 20 } },
    required: ["approved"],
    additionalProperties: false,
  },
};
const dagWith = (params: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  steps: [
    { id: "build", kind: "compute" },
    { id: "approve", kind: "wait", dependsOn: ["build"], params, ...extra },
  ],
});
const issuesOf = (input: unknown) => {
  const r = DagDefinition.safeParse(input);
  return r.success ? [] : r.error.issues.map((i) => i.message);
};

describe("wait steps at submission (pure contract, no transport)", () => {
  it("accepts a wait with a schema, resolvers and defaults onTimeout to fail", () => {
    const r = DagDefinition.parse(dagWith({ ...approval, resolvers: ["role:approver", "token:alice"] }));
    const step = r.steps[1]!;
    expect(step.kind).toBe("wait");
    expect(step.kind === "wait" && step.params.onTimeout).toBe("fail");
  });

  it.each([
    [{ ...approval, onTimeout: "continue" }, /onTimeout continue needs a defaultOutput/],
    [{ ...approval, defaultOutput: { approved: false } }, /defaultOutput is only for onTimeout continue/],
    [{ ...approval, onTimeout: "continue", defaultOutput: { approved: "no" } }, /defaultOutput does not fit/],
    [{ ...approval, schema: { type: "string", pattern: "^(a+)+$" } }, /keyword "pattern" is not supported/],
    [{ ...approval, schema: { type: "strng" } }, /schema: Unsupported type/],
    [{ ...approval, schema: { type: "object", patternProperties: { "^a": {} } } }, /"patternProperties" is not/],
    [{ ...approval, schema: { $ref: "https://example.com/s.json" } }, /External \$ref is not supported/],
    [{ ...approval, schema: { not: { type: "string" } } }, /not is not supported/],
    [{ ...approval, schema: { if: { type: "string" }, then: { maxLength: 1 } } }, /if\/then\/else\) are not supported/],
    [{ ...approval, schema: { description: "x".repeat(9000) } }, /more than 8192/],
    [{ ...approval, resolvers: ["user:alice"] }, /token:<name> or role:<role>/],
    [{ ...approval, timeoutMs: 0 }, /./],
  ])("refuses %j", (params, message) => {
    expect(
      issuesOf(dagWith(params)).some((m) => message.test(m)),
      JSON.stringify(issuesOf(dagWith(params))),
    ).toBe(true);
  });

  it("refuses two waits for the same signal, a wait with map, and an attempt timeoutMs on a wait", () => {
    const two = {
      steps: [
        { id: "a", kind: "wait", params: approval },
        { id: "b", kind: "wait", params: approval },
      ],
    };
    expect(issuesOf(two)).toContain('steps "a" and "b" wait for the same signal "approval"');
    expect(issuesOf(dagWith(approval, { timeoutMs: 5 }))).toContain(
      'wait step "approve": its timeout is params.timeoutMs',
    );
    const mapped = dagWith(approval, { map: { over: "input.items" } });
    expect(issuesOf(mapped)).toContain('wait step "approve" cannot be a map');
  });
});

describe("who may resolve a wait and which payloads fit (pure, no transport)", () => {
  it("no resolvers: every token of the tenant; otherwise by token name or role only", () => {
    expect(mayResolve(undefined, {})).toBe(true);
    expect(mayResolve(["token:alice"], { name: "alice" })).toBe(true);
    expect(mayResolve(["token:alice"], { name: "bob", roles: ["alice"] })).toBe(false);
    expect(mayResolve(["role:approver"], { name: "bob", roles: ["approver"] })).toBe(true);
    expect(mayResolve(["role:approver"], {})).toBe(false);
  });

  it("checks a payload against the schema and names the failing path", () => {
    const c = payloadChecker(approval.schema);
    if (!c.ok) throw new Error(c.error);
    expect(c.check({ approved: true })).toBeUndefined();
    expect(c.check({ approved: "yes" })).toMatch(/^approved: /);
    expect(c.check({ approved: true, extra: 1 })).toBeDefined();
    expect(c.check({ approved: true, note: "x".repeat(21) })).toMatch(/^note: /);
    const none = payloadChecker(undefined);
    expect(none.ok && none.check("anything")).toBeUndefined();
  });
});
