import { describe, expect, it } from "vitest";
import { firstDifference } from "./first-difference.ts";

describe("firstDifference (pure; proves no transport)", () => {
  it("is undefined for equal values, whatever the key order", () => {
    expect(firstDifference({ a: [1, { b: 2, c: 3 }] }, { a: [1, { c: 3, b: 2 }] })).toBeUndefined();
  });
  it("names the path of the first differing leaf, a missing key, and an array cut short", () => {
    expect(firstDifference({ t: { ledger: [1, 2] } }, { t: { ledger: [1, 3] } })).toBe(
      "$.t.ledger[1]: 2 ≠ 3 (lengths 2/2)",
    );
    expect(firstDifference({ a: 1 }, { a: 1, b: "x" })).toBe('$.b: missing ≠ "x"');
    expect(firstDifference([1], [1, { s: 7 }])).toBe('$[1]: missing ≠ {"s":7} (lengths 1/2)');
  });
  it("cuts long values", () => {
    expect(firstDifference("x".repeat(10), "y", "$", 4)).toBe('$: "xxx… ≠ "y"');
  });
});
