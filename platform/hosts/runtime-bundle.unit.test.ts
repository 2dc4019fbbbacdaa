import { spawnSync } from "node:child_process";
import { isAscii } from "node:buffer";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { builtinModules, createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Script } from "node:vm";
import { buildSync } from "esbuild";
import { describe, expect, it, onTestFinished } from "vitest";
import { asciiSource, RUNTIME_LOADER, runtimeCommand } from "./runtime-bundle.ts";

const loader = createRequire(import.meta.url)("./runtime-loader.cjs") as {
  codeCacheFile(bundle: string, version?: string, execArgv?: readonly string[]): string;
  readSource(bundle: string): string;
  wrap(source: string): string;
};
const builtins = new Set(builtinModules);
const ROOT = resolve(import.meta.dirname, "../..");

/** Starts `bundle` through the loader with no node flags (the cache name of `loader.codeCacheFile(b, v, [])`). */
function load(bundle: string, args: readonly string[] = [], env: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, [RUNTIME_LOADER, bundle, ...args], { env, encoding: "utf8", timeout: 30_000 });
}
const cacheOf = (bundle: string) => loader.codeCacheFile(bundle, process.version, []);

/** A fresh directory under the system's tmp, removed when the test ends (whatever its outcome). */
function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// Pure bundling (esbuild on the repository's files) and node starts of the bundle, or of small stand-in
// bundles, through the loader: proves no transport; every host, e2e and proof test starts runtimes this way.
describe("runtime bundle and its code cache (esbuild, vm.Script, no transport)", () => {
  it("is one self-contained strict CommonJS file, started by the loader: no module resolved in node_modules", () => {
    const argv = runtimeCommand((why) => expect.fail(`bundle fell back to source: ${why}`));
    expect(argv.at(-2)).toBe(RUNTIME_LOADER);
    const file = argv.at(-1)!;
    expect(file).toMatch(/\/\.run\/build\/runtime-[0-9a-f]{16}\.cjs$/);
    const text = readFileSync(file, "utf8");
    // All ASCII, so that the loader reads it as a one-byte string (its comments and regular expressions
    // held `µs`, `—`, `Wärting`: the whole source was a two-byte string).
    expect(isAscii(readFileSync(file))).toBe(true);
    // Strict throughout, as the ES module bundle it replaces was.
    expect(text.startsWith('"use strict";')).toBe(true);
    // Calls, not code that ajv writes into strings (`'require("ajv/dist/runtime/equal")'`).
    const required = [...text.matchAll(/(?<![\w.'"`])require\("([^"]+)"\)/g)].map((m) => m[1]!);
    expect(required.length).toBeGreaterThan(0);
    expect(required.filter((s) => !s.startsWith("node:") && !builtins.has(s))).toEqual([]);
    // Copied away from the repository (no node_modules above it), it still loads every module,
    // first without a code cache, then with one made from it, and gets as far as its own configuration check.
    const dir = tempDir("drover-runtime-bundle-");
    const copy = join(dir, "runtime.cjs");
    copyFileSync(file, copy);
    for (const cached of [false, true]) {
      if (cached) writeFileSync(cacheOf(copy), new Script(loader.wrap(text), { filename: copy }).createCachedData());
      const run = load(copy);
      expect(run.stderr).not.toMatch(/Cannot find (package|module)|Dynamic require|code cache/);
      expect(run.stderr).toContain("drover runtime: invalid configuration");
      expect(run.status).not.toBe(0);
    }
  });

  it("writes a code cache once, after a start without one, and later starts use it; a rejected one is replaced", () => {
    const dir = tempDir("drover-runtime-loader-");
    const bundle = join(dir, "runtime-0123456789abcdef.cjs");
    // A stand-in bundle: reports its argv, strictness and __filename, and lives long enough for a cache written at once.
    writeFileSync(
      bundle,
      `"use strict";
const strict = (function () { return this === undefined; })();
console.log(JSON.stringify({ argv: process.argv.slice(1), strict, filename: __filename }));
setTimeout(() => {}, 300);
`,
    );
    const now = { DROVER_RUNTIME_CODE_CACHE_AFTER_MS: "0" };
    const expected = JSON.stringify({ argv: [bundle, "--an-argument"], strict: true, filename: bundle });
    const first = load(bundle, ["--an-argument"], now);
    expect(first.stderr).toBe("");
    expect(first.stdout.trim()).toBe(expected);
    const written = statSync(cacheOf(bundle));
    expect(written.size).toBeGreaterThan(0);

    // Used, not rewritten: no rejection, the same file.
    const second = load(bundle, ["--an-argument"], now);
    expect(second.stderr).toBe("");
    expect(second.stdout.trim()).toBe(expected);
    expect(statSync(cacheOf(bundle)).ino).toBe(written.ino);
    expect(statSync(cacheOf(bundle)).mtimeMs).toBe(written.mtimeMs);

    // Garbage (or a cache from another node): rejected, the bundle compiles from source, and it is replaced.
    writeFileSync(cacheOf(bundle), "not a V8 code cache");
    const third = load(bundle, ["--an-argument"], now);
    expect(third.stderr).toContain("rejected; compiled from source");
    expect(third.stdout.trim()).toBe(expected);
    const fourth = load(bundle, ["--an-argument"], now);
    expect(fourth.stderr).toBe("");
    expect(fourth.stdout.trim()).toBe(expected);

    // Other node flags or another node, another cache (V8 rejects a cache made under other flags).
    expect(loader.codeCacheFile(bundle, process.version, ["--max-semi-space-size=16"])).not.toBe(cacheOf(bundle));
    expect(loader.codeCacheFile(bundle, "v0.0.0", [])).not.toBe(cacheOf(bundle));
  });

  it("with DROVER_RUNTIME_CODE_CACHE_AT_EXIT=1 (an image build) writes the cache as a start ends, however soon; without it such a start writes none", () => {
    const dir = tempDir("drover-runtime-loader-");
    const bundle = join(dir, "runtime-0123456789abcdef.cjs");
    // Ends at once with a failure, as a runtime without a configuration does at its check.
    writeFileSync(bundle, `"use strict";\nconsole.log("checked");\nprocess.exit(3);\n`);
    const plain = load(bundle);
    expect([plain.status, plain.stdout.trim(), existsSync(cacheOf(bundle))]).toEqual([3, "checked", false]);
    const build = load(bundle, [], { DROVER_RUNTIME_CODE_CACHE_AT_EXIT: "1" });
    expect([build.status, build.stdout.trim(), build.stderr]).toEqual([3, "checked", ""]);
    expect(statSync(cacheOf(bundle)).size).toBeGreaterThan(0);
    // The next start compiles through it: accepted (no rejection), and it writes nothing more.
    const next = load(bundle);
    expect([next.status, next.stdout.trim(), next.stderr]).toEqual([3, "checked", ""]);
  });

  it("imports a tenant's worker module (worker-module.ts) from a bundle compiled from its code cache, too", () => {
    const dir = tempDir("drover-runtime-loader-");
    // loadWorker bundled as the runtime is, run through the loader without, then with, a code cache; the
    // module imported has no defineWorker(...) export, so loadWorker's answer tells whether import() worked.
    const entry = join(dir, "entry.ts");
    const worker = join(dir, "not-a-worker.mjs");
    writeFileSync(worker, "export const answer = 42;\n");
    writeFileSync(
      entry,
      `import { loadWorker } from ${JSON.stringify(join(ROOT, "services/runtime/shell/worker-module.ts"))};
loadWorker(${JSON.stringify(worker)}, []).catch((e) => console.log(e.message)).then(() => setTimeout(() => {}, 300));
`,
    );
    const bundle = join(dir, "runtime-0123456789abcdef.cjs");
    buildSync({
      entryPoints: [entry],
      bundle: true,
      platform: "node",
      format: "cjs",
      target: "node20",
      outfile: bundle,
    });
    const now = { DROVER_RUNTIME_CODE_CACHE_AFTER_MS: "0" };
    for (const cached of [false, true]) {
      expect(existsSync(cacheOf(bundle))).toBe(cached);
      const run = load(bundle, [], now);
      expect(run.stderr).toBe("");
      expect(run.stdout.trim()).toBe(`worker module ${worker} has no defineWorker(...) default export`);
    }
  });

  it("writes comments and regular expressions in ASCII with the same meaning, or leaves a source it cannot", () => {
    const source = [
      "// Wärting — µs",
      "/** ü */ const re = /(\\d+)(µs|ms)/g, cls = /^[à-ÿ]+$/, pair = /😀/u, loose = /😀/;",
      'module.exports = ["1µs 2ms".match(re), cls.test("àéÿ"), cls.test("a"), pair.test("😀"), loose.test("x😀")];',
    ].join("\n");
    const escaped = asciiSource(source);
    expect(isAscii(Buffer.from(escaped))).toBe(true);
    expect(escaped.split("\n").length).toBe(3);
    const run = (text: string) => {
      const module = { exports: undefined as unknown };
      new Function("module", text)(module);
      return module.exports;
    };
    expect(run(escaped)).toEqual(run(source));
    expect(run(source)).toEqual([["1µs", "2ms"], true, false, true, true]);
    // A line separator (a line end in a comment) or a character after a backslash: kept as it is (read as UTF-8).
    for (const kept of ["// a\u2028b", "const re = /\\µ/;"]) expect(asciiSource(kept)).toBe(kept);
  });

  it("reads an ASCII bundle as one-byte text and any other as UTF-8: the same text either way", () => {
    const dir = tempDir("drover-runtime-loader-");
    for (const [name, text] of [
      ["ascii.cjs", 'console.log("\\u00b5s");\n'],
      ["utf8.cjs", 'console.log("µs — Wärting 😀");\n'],
    ] as const) {
      const bundle = join(dir, name);
      writeFileSync(bundle, text);
      expect(loader.readSource(bundle)).toBe(text);
      const run = load(bundle);
      expect(run.stderr).toBe("");
      expect(run.stdout).toBe(name === "ascii.cjs" ? "µs\n" : "µs — Wärting 😀\n");
    }
  });

  it("writes no cache from a process that ends before CODE_CACHE_AFTER_MS (a crash loop costs nothing more)", () => {
    const dir = tempDir("drover-runtime-loader-");
    const bundle = join(dir, "runtime-0123456789abcdef.cjs");
    writeFileSync(bundle, '"use strict";\nsetTimeout(() => {}, 50);\n');
    const run = load(bundle, [], { DROVER_RUNTIME_CODE_CACHE_AFTER_MS: "5000" });
    expect(run.status).toBe(0);
    expect(() => statSync(cacheOf(bundle))).toThrow(/ENOENT/);
  });
});
