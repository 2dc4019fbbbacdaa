import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/** conventions.md: every dependency is pinned to an exact version (reads package.json; no transport). */
const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as Record<
  string,
  Record<string, string> | undefined
>;
const EXACT = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;

describe("package.json pins every dependency exactly", () => {
  it.each(["dependencies", "devDependencies", "optionalDependencies", "peerDependencies"])(
    "%s has no ranges, tags or URLs",
    (field) => {
      const loose = Object.entries(pkg[field] ?? {}).filter(([, v]) => !EXACT.test(v));
      expect(loose).toEqual([]);
    },
  );

  it("has dependencies to check, and the pattern refuses ^, ~, x-ranges and tags", () => {
    expect(Object.keys(pkg.dependencies ?? {}).length).toBeGreaterThan(0);
    for (const v of ["^1.2.3", "~1.2.3", "1.2.x", "1.x", "latest", ">=1.0.0", "*", "1.2"])
      expect(EXACT.test(v), v).toBe(false);
  });
});
