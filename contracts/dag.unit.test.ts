import { describe, expect, it } from "vitest";
import { DAG_LIMITS, DagDefinition, findCycle, type DagInput } from "./dag.ts";

type StepInput = DagInput["steps"][number];
const compute = (id: string, dependsOn: string[] = []): StepInput => ({ id, kind: "compute", dependsOn });
const dag = (...steps: StepInput[]): DagInput => ({ steps });
/** A DAG with steps the input type itself forbids: what an untyped client may send. */
const untypedDag = (...steps: unknown[]) => ({ steps });
const issuesOf = (input: unknown) => {
  const r = DagDefinition.safeParse(input);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
};
const expectRejected = (input: unknown, pattern: RegExp) => {
  const issues = issuesOf(input);
  expect(issues.length, "the DAG was accepted").toBeGreaterThan(0);
  expect(
    issues.some((m) => pattern.test(m)),
    `no issue matches ${pattern}: ${JSON.stringify(issues)}`,
  ).toBe(true);
};
/** A chain s0 <- s1 <- ... <- s(n-1), each step depending on the previous one. */
const chain = (n: number) => Array.from({ length: n }, (_, i) => compute(`s${i}`, i === 0 ? [] : [`s${i - 1}`]));

describe("a valid DAG parses", () => {
  it("accepts a 50-step DAG with fan-out, fan-in and every kind, applying defaults", () => {
    const steps: StepInput[] = [compute("root")];
    for (let i = 1; i < 45; i++) steps.push(compute(`c${i}`, i % 3 === 0 ? ["root", `c${i - 1}`] : ["root"]));
    steps.push({
      id: "flaky",
      kind: "flaky",
      dependsOn: ["c1", "c2"],
      params: { failAttempts: 2 },
      retry: { maxAttempts: 3, backoffMs: 100 },
    });
    steps.push({ id: "sleep", kind: "sleep", dependsOn: ["flaky"], params: { durationMs: 1000 } });
    steps.push({ id: "http", kind: "http", dependsOn: ["sleep"], params: { url: "https://example.com/hook" } });
    steps.push({ id: "llm", kind: "llm", dependsOn: ["http"], params: { model: "m", prompt: "p" } });
    steps.push(compute("sink", Array.from({ length: 44 }, (_, i) => `c${i + 1}`).concat(["llm"])));
    expect(steps).toHaveLength(50);
    const parsed = DagDefinition.parse(dag(...steps));
    expect(parsed.steps).toHaveLength(50);
    expect(parsed.steps[0]).toEqual({
      id: "root",
      kind: "compute",
      dependsOn: [],
      retry: { maxAttempts: 1, backoffMs: 0 },
      params: { durationMs: 0, busy: false },
    });
    expect(parsed.steps.find((s) => s.id === "http")?.params).toEqual({
      url: "https://example.com/hook",
      method: "GET",
      headers: {},
      timeoutMs: 10_000,
    });
  });

  it(`accepts exactly ${DAG_LIMITS.maxSteps} steps`, () => {
    expect(issuesOf(dag(...chain(DAG_LIMITS.maxSteps)))).toEqual([]);
  });
});

describe("DAG validation rejects with a message naming the offending step", () => {
  it("rejects an empty DAG", () => {
    expectRejected({ steps: [] }, /at least one step/);
    expectRejected({}, /^steps: /);
  });

  it("rejects a self-dependency", () => {
    expectRejected(dag(compute("a", ["a"])), /step "a" depends on itself/);
  });

  it("rejects a two-step cycle, naming the cycle", () => {
    expectRejected(dag(compute("a", ["b"]), compute("b", ["a"])), /dependency cycle: a -> b -> a/);
  });

  it("rejects a cycle reachable only through an acyclic prefix", () => {
    expectRejected(
      dag(compute("a"), compute("b", ["a", "d"]), compute("c", ["b"]), compute("d", ["c"])),
      /dependency cycle: b -> d -> c -> b/,
    );
  });

  it(`rejects a cycle through all ${DAG_LIMITS.maxSteps} steps`, () => {
    const steps = chain(DAG_LIMITS.maxSteps);
    steps[0] = compute("s0", [`s${DAG_LIMITS.maxSteps - 1}`]);
    expectRejected(dag(...steps), /dependency cycle: s0 -> s499 -> s498 -> .* -> s1 -> s0$/);
  });

  it("rejects a dependency on an unknown step", () => {
    expectRejected(dag(compute("a"), compute("b", ["a", "ghost"])), /step "b" depends on unknown step "ghost"/);
  });

  it("rejects duplicate step ids", () => {
    expectRejected(dag(compute("a"), compute("b", ["a"]), compute("a")), /duplicate step id "a"/);
  });

  it("rejects an unknown kind, listing the known ones", () => {
    expectRejected(
      { steps: [{ id: "a", kind: "shell", params: {} }] },
      /steps\.0\.kind: .*'compute' \| 'flaky' \| 'sleep' \| 'http' \| 'llm'/,
    );
    expectRejected({ steps: [{ id: "a" }] }, /steps\.0\.kind/);
  });

  it(`rejects more than ${DAG_LIMITS.maxSteps} steps`, () => {
    expectRejected(dag(...chain(DAG_LIMITS.maxSteps + 1)), new RegExp(`at most ${DAG_LIMITS.maxSteps} steps`));
  });

  it(`rejects a step with more than ${DAG_LIMITS.maxDependsOn} dependencies`, () => {
    const deps = Array.from({ length: DAG_LIMITS.maxDependsOn + 1 }, (_, i) => `d${i}`);
    expectRejected(dag(...deps.map((d) => compute(d)), compute("sink", deps)), /steps\.65\.dependsOn/);
  });

  it(`rejects params larger than ${DAG_LIMITS.maxParamsBytes} bytes even when every field is within its own limit`, () => {
    const headers = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`x-h${i}`, "v".repeat(1000)]));
    expectRejected(
      dag({ id: "big", kind: "http", params: { url: "http://x.test/", headers } }),
      /step "big" params are \d+ bytes, more than 16384/,
    );
    const llm = { model: "m", prompt: "p".repeat(8192), system: "s".repeat(8192) };
    expectRejected(dag({ id: "llm", kind: "llm", params: llm }), /step "llm" params are \d+ bytes/);
  });

  it("counts params size in UTF-8 bytes, not characters", () => {
    const headers = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`x-h${i}`, "€".repeat(1000)]));
    expect(JSON.stringify(headers).length).toBeLessThan(DAG_LIMITS.maxParamsBytes);
    expectRejected(
      dag({ id: "utf8", kind: "http", params: { url: "http://x.test/", headers } }),
      /step "utf8" params are \d+ bytes/,
    );
  });

  it.each(["ftp://x.test/file", "file:///etc/passwd", "javascript:alert(1)", "x.test/path", "", "http//x.test"])(
    "rejects an http step whose URL %j is not http(s)",
    (url) => {
      expectRejected(dag({ id: "h", kind: "http", params: { url } }), /steps\.0\.params\.url/);
    },
  );

  it("rejects an http step with an unknown method or a zero timeout", () => {
    expectRejected(
      untypedDag({ id: "h", kind: "http", params: { url: "http://x.test/", method: "PATCH" } }),
      /params\.method/,
    );
    expectRejected(
      dag({ id: "h", kind: "http", params: { url: "http://x.test/", timeoutMs: 0 } }),
      /params\.timeoutMs/,
    );
  });

  it.each([-1, 20, 1.5])("rejects a flaky step with failAttempts %d (allowed 0..19)", (failAttempts) => {
    expectRejected(dag({ id: "f", kind: "flaky", params: { failAttempts } }), /steps\.0\.params\.failAttempts/);
  });

  it("rejects a flaky step without failAttempts, a sleep without durationMs and an llm step without a prompt", () => {
    expectRejected(untypedDag({ id: "f", kind: "flaky", params: {} }), /params\.failAttempts/);
    expectRejected(untypedDag({ id: "s", kind: "sleep", params: {} }), /params\.durationMs/);
    expectRejected(dag({ id: "l", kind: "llm", params: { model: "m", prompt: "" } }), /params\.prompt/);
  });

  it("rejects params belonging to another kind (params are strict per kind)", () => {
    expectRejected(untypedDag({ id: "c", kind: "compute", params: { url: "http://x.test/" } }), /params/);
  });

  it("rejects out-of-range retry policies", () => {
    expectRejected(dag({ ...compute("a"), retry: { maxAttempts: 0, backoffMs: 0 } }), /retry\.maxAttempts/);
    expectRejected(dag({ ...compute("a"), retry: { maxAttempts: 21, backoffMs: 0 } }), /retry\.maxAttempts/);
    expectRejected(dag({ ...compute("a"), retry: { maxAttempts: 2, backoffMs: -1 } }), /retry\.backoffMs/);
  });

  it("rejects a step id that is not a subject-safe id", () => {
    expectRejected(dag(compute("Step.A")), /steps\.0\.id: StepId must be lowercase/);
  });

  it("rejects unknown fields on the DAG and on a step", () => {
    expectRejected({ ...dag(compute("a")), owner: "x" }, /owner/);
    expectRejected(untypedDag({ ...compute("a"), timeout: 5 }), /timeout/);
  });

  it("reports every broken rule at once, not only the first", () => {
    const issues = issuesOf(dag(compute("a", ["ghost"]), compute("a"), compute("b", ["b"])));
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/duplicate step id "a"/),
        expect.stringMatching(/unknown step "ghost"/),
        expect.stringMatching(/"b" depends on itself/),
      ]),
    );
  });
});

describe("findCycle", () => {
  it("returns undefined for an acyclic graph and a closed path for a cyclic one", () => {
    expect(
      findCycle([
        { id: "a", dependsOn: [] },
        { id: "b", dependsOn: ["a"] },
      ]),
    ).toBeUndefined();
    expect(
      findCycle([
        { id: "a", dependsOn: ["b"] },
        { id: "b", dependsOn: ["a"] },
      ]),
    ).toEqual(["a", "b", "a"]);
  });
});
