import { describe, expect, it } from "vitest";
import { canonicalJson, stepInputs } from "./step-inputs.ts";

/** The entries/filter/sort/map form canonicalJson had before it was written as loops: digests recorded with it must not move. */
function reference(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(reference).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(",")}}`;
}

const sparse = [1, , 3]; // eslint-disable-line no-sparse-arrays

describe("canonicalJson", () => {
  it.each([
    ["scalars", [null, true, 0, -1.5, "x", 'é\u2028"q"']],
    ["keys in code-unit order, undefined values dropped", { b: 1, a: undefined, B: [2], é: 3, "": 4, "10": 5, "9": 6 }],
    ["nested arrays and objects", { z: [{ y: 1, x: [null, { w: undefined }] }], a: {} }],
    ["undefined and functions in arrays become null", [undefined, () => 1, Symbol("s")]],
    ["a hole stays empty", sparse],
    ["a date is an object without own keys", { at: new Date(0) }],
    ["top-level undefined", undefined],
  ])("writes the bytes the reference form writes: %s", (_name, value) => {
    expect(canonicalJson(value)).toBe(reference(value));
  });

  it("gives equal bytes for equal values whatever the key order", () => {
    expect(canonicalJson({ a: 1, b: { d: 2, c: 3 } })).toBe(canonicalJson({ b: { c: 3, d: 2 }, a: 1 }));
  });

  it("records a step's inputs with its dependencies' digests in dependency-id order", () => {
    const step = {
      id: "s3",
      kind: "compute",
      params: { durationMs: 0, busy: false },
      dependsOn: ["s2", "s1"],
    } as const;
    const deps = new Map([
      ["s1", "d1"],
      ["s2", "d2"],
    ]);
    expect(stepInputs(step as never, deps)).toBe(
      '{"deps":[["s1","d1"],["s2","d2"]],"kind":"compute","params":{"busy":false,"durationMs":0},"step":"s3"}',
    );
  });
});
