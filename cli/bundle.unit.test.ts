import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { cliBundle } from "./bundle.mjs";

// The CLI's start-up cache (cli/bundle.mjs, used by cli/bin.mjs) on a test-only source tree in a
// temporary directory, and the real bin falling back to tsx when the cache cannot be written.
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tree(): Promise<{ src: string; cache: string; lines: string[] }> {
  const root = await mkdtemp(join(tmpdir(), "drover-cli-bundle-"));
  dirs.push(root);
  const src = join(root, "src");
  await mkdir(join(src, "lib"), { recursive: true });
  await writeFile(join(src, "main.ts"), `import { word } from "./lib/word.ts";\nexport const said: string = word;\n`);
  await writeFile(join(src, "lib/word.ts"), `export const word = "first " + import.meta.dirname;\n`);
  return { src, cache: join(root, "cache"), lines: [] };
}

const load = async (file: string) =>
  (await import(`${pathToFileURL(file).href}?t=${Math.random()}`)) as { said: string };

describe("the CLI bundle cache", () => {
  it("is built on the first start and used as is on the second; an edited source file makes a new one", async () => {
    const t = await tree();
    const debug = (l: string) => t.lines.push(l);
    const first = await cliBundle(join(t.src, "main.ts"), t.cache, debug);
    const second = await cliBundle(join(t.src, "main.ts"), t.cache, debug);
    expect(t.lines.map((l) => l.split(" ")[0])).toEqual(["built", "cached"]);
    expect(second).toBe(first);
    // Each source file keeps its own import.meta.dirname inside the bundle.
    expect((await load(second!)).said).toBe(`first ${join(t.src, "lib")}`);

    await writeFile(join(t.src, "lib/word.ts"), `export const word = "second";\n`);
    const third = await cliBundle(join(t.src, "main.ts"), t.cache, debug);
    expect(t.lines[2]).toMatch(/^built /);
    expect(third).not.toBe(first);
    expect((await load(third!)).said).toBe("second");
    expect(await cliBundle(join(t.src, "main.ts"), t.cache, debug)).toBe(third);
  });

  it("gives no bundle (the caller loads from source) when the cache directory cannot be written or the build fails", async () => {
    const t = await tree();
    const debug = (l: string) => t.lines.push(l);
    await writeFile(`${t.cache}-file`, "not a directory");
    expect(await cliBundle(join(t.src, "main.ts"), join(`${t.cache}-file`, "build"), debug)).toBeUndefined();
    await writeFile(join(t.src, "lib/word.ts"), `export const word = ;\n`);
    expect(await cliBundle(join(t.src, "main.ts"), t.cache, debug)).toBeUndefined();
    expect(t.lines).toEqual([expect.stringMatching(/from source$/), expect.stringMatching(/from source$/)]);
  });

  it("the installed bin prints the same help, exit 0, from a bundle and from source when the cache cannot be written", async () => {
    const t = await tree();
    await writeFile(t.cache, "not a directory");
    const bin = resolve(import.meta.dirname, "bin.mjs");
    const run = (env: Record<string, string>) =>
      promisify(execFile)(process.execPath, [bin, "--help"], {
        env: { ...process.env, DROVER_CLI_DEBUG: "1", ...env },
      });
    const unwritable = await run({ DROVER_CLI_CACHE_DIR: join(t.cache, "build") });
    expect(unwritable.stderr).toMatch(/^drover-cli: bundle unavailable \(.*\); from source\n$/);
    const fromSource = await run({ DROVER_CLI_FROM_SOURCE: "1" });
    await run({});
    const bundled = await run({});
    expect(bundled.stderr).toMatch(/^drover-cli: cached bundle .*\.run\/build\/cli-[0-9a-f]{16}\/drover\.mjs\n$/);
    expect(bundled.stdout).toBe(fromSource.stdout);
    expect(unwritable.stdout).toBe(fromSource.stdout);
    expect(fromSource.stdout).toMatch(/^usage: drover runs <command>/);
  });
});
