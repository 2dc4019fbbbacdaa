import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";
import { sourceLocation } from "./bundle-plugins.mjs";

const dir = mkdtempSync(join(tmpdir(), "drover-plugin-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Pure bundling (esbuild on files in a temporary directory): proves no transport.
describe("the source-location plugin (esbuild, no transport)", () => {
  it("replaces each bare import.meta location by the source file's literal, keeps quoted ones, and hashes what it read", async () => {
    const file = join(dir, "entry.ts");
    const source = [
      "export const d = import.meta.dirname;",
      "export const f = import.meta.filename;",
      "export const u = import.meta.url;",
      'export const q = "import.meta.dirname";',
    ].join("\n");
    writeFileSync(file, source);
    const inputs: Record<string, string> = {};
    await build({
      entryPoints: [file],
      bundle: true,
      format: "esm",
      outfile: join(dir, "out.mjs"),
      plugins: [sourceLocation(inputs)],
      logLevel: "silent",
    });
    const out = readFileSync(join(dir, "out.mjs"), "utf8");
    expect(out).toContain(`d = ${JSON.stringify(dir)}`);
    expect(out).toContain(`f = ${JSON.stringify(file)}`);
    expect(out).toContain(`u = ${JSON.stringify(pathToFileURL(file).href)}`);
    expect(out).toContain('q = "import.meta.dirname"');
    expect(Object.keys(inputs)).toEqual([file]);
    expect(inputs[file]).toMatch(/^[0-9a-f]{64}$/);
  });
});
