import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { isPlainJson } from "./plain-json.ts";

/** isPlainJson says true only where zod's `z.json()` accepts the value and parses it to an equal one. */
const json = z.json();
/** Whether an object in `v` has an own `__proto__` key (JSON.parse makes one; isPlainJson leaves it to zod). */
const holdsProtoKey = (v: unknown): boolean =>
  typeof v === "object" &&
  v !== null &&
  (Object.prototype.hasOwnProperty.call(v, "__proto__") || Object.values(v).some(holdsProtoKey));

describe("isPlainJson: only values z.json() accepts unchanged (bounded property)", () => {
  it("answers true for every JSON value without a `__proto__` key (false with one), and for each z.json() parses it to an equal value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const parsed: unknown = JSON.parse(JSON.stringify(v));
        expect(isPlainJson(parsed)).toBe(!holdsProtoKey(parsed));
        if (holdsProtoKey(parsed)) return;
        expect(json.safeParse(parsed)).toEqual({ success: true, data: parsed });
      }),
      { numRuns: 1000 },
    );
    // The counterexample fast-check found (seed 195253623): JSON.parse makes `__proto__` an own key.
    expect(isPlainJson(JSON.parse('[{"__proto__":null}]'))).toBe(false);
  });

  it("answers true for no value z.json() refuses or changes, whatever its prototype, keys, holes or numbers", () => {
    const anything = fc.anything({
      withBigInt: true,
      withBoxedValues: true,
      withDate: true,
      withMap: true,
      withNullPrototype: true,
      withObjectString: true,
      withSet: true,
      withSparseArray: true,
      withTypedArray: true,
      withUnicodeString: true,
    });
    fc.assert(
      fc.property(anything, (v) => {
        if (!isPlainJson(v)) return;
        const r = json.safeParse(v);
        expect(r.success).toBe(true);
        expect(r.data).toStrictEqual(v);
      }),
      { numRuns: 2000 },
    );
  });

  it("refuses what JSON cannot hold or zod would change, and values nested deeper than 64 levels", () => {
    const deep = (n: number): unknown => (n === 0 ? 1 : [deep(n - 1)]);
    for (const v of [NaN, Infinity, undefined, () => 1, new Date(0), Object.create(null), new Array(2), deep(65)])
      expect(isPlainJson(v)).toBe(false);
    expect(isPlainJson(JSON.parse('{"__proto__": 1}'))).toBe(false);
    expect(isPlainJson({ [Symbol("s")]: 1 })).toBe(false);
    expect(isPlainJson(Object.defineProperty({}, "hidden", { value: 1, enumerable: false }))).toBe(false);
    expect(isPlainJson(deep(63))).toBe(true);
  });
});
