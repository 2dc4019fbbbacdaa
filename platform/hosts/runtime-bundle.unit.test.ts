import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runtimeCommand } from "./runtime-bundle.ts";

// Pure bundling (esbuild on the repository's files) and one node start that stops at the
// configuration check: proves no transport; every host, e2e and proof test starts runtimes from this bundle.
describe("runtime bundle (esbuild, no transport)", () => {
  it("is one self-contained file: npm packages bundled in, so a runtime start resolves nothing in node_modules", () => {
    const argv = runtimeCommand((why) => expect.fail(`bundle fell back to source: ${why}`));
    const file = argv.at(-1)!;
    expect(file).toMatch(/\/\.run\/build\/runtime-[0-9a-f]{16}\.mjs$/);
    const text = readFileSync(file, "utf8");
    const specifiers = [...text.matchAll(/^import\s[^;]*?from\s+"([^"]+)"/gm)].map((m) => m[1]!);
    expect(specifiers.length).toBeGreaterThan(0);
    expect(specifiers.filter((s) => !s.startsWith("node:"))).toEqual([]);
    // Copied away from the repository (no node_modules above it), it still loads every module and
    // gets as far as its own configuration check.
    const dir = mkdtempSync(join(tmpdir(), "drover-runtime-bundle-"));
    try {
      copyFileSync(file, join(dir, "runtime.mjs"));
      const run = spawnSync(process.execPath, [join(dir, "runtime.mjs")], {
        env: {},
        encoding: "utf8",
        timeout: 30_000,
      });
      expect(run.stderr).not.toMatch(/Cannot find (package|module)|Dynamic require/);
      expect(run.stderr).toContain("drover runtime: invalid configuration");
      expect(run.status).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
