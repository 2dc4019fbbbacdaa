// The CLI's start-up cache (plain JS: the fast path loads neither tsx nor esbuild). Like the services'
// bundles (platform/service-bundle.ts), cli/drover.ts is bundled by esbuild into one ESM file under
// .run/build, packages external, each repository file keeping its import.meta.dirname/url/filename.
// Beside it, a manifest lists the sha256 of every source file the build read (hashed as it was read),
// and a start uses the bundle only if every one of them still hashes the same: an edited, added-to or
// removed source file means a new build, never a stale bundle. The bundle is a cache, never required:
// anything failing here (no esbuild, build error, directory not writable) returns undefined and the
// caller loads the CLI from source through tsx, as before.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { sourceLocation } from "../platform/bundle-plugins.mjs";

const sha256 = (data) => createHash("sha256").update(data).digest("hex");
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const PLUGINS = new URL("../platform/bundle-plugins.mjs", import.meta.url);

/**
 * The path of an up-to-date bundle of `entry` in `dir`, building it when there is none (or it is out
 * of date); undefined when it cannot be had. `debug` gets one line saying which way it went.
 */
export async function cliBundle(entry, dir, debug = () => {}) {
  try {
    // The manifest is named by the entry and by the build's own code: changed build options rebuild.
    const code = [import.meta.url, PLUGINS].map((u) => readFileSync(fileURLToPath(u), "utf8"));
    const key = sha256([entry, ...code].join("\n")).slice(0, 16);
    const manifest = join(dir, `cli-${key}.json`);
    const cached = readManifest(manifest);
    if (cached && upToDate(cached.inputs) && existsSync(join(dir, cached.bundle))) {
      debug(`cached bundle ${join(dir, cached.bundle)}`);
      return join(dir, cached.bundle);
    }
    const built = await build(entry, dir);
    if (!built) {
      debug("bundle not built (a source file esbuild read was not hashed); from source");
      return undefined;
    }
    mkdirSync(dir, { recursive: true });
    writeOnce(join(dir, dirname(built.bundle)), built.files);
    writeAtomically(manifest, JSON.stringify({ bundle: built.bundle, inputs: built.inputs }));
    debug(`built bundle ${join(dir, built.bundle)}`);
    return join(dir, built.bundle);
  } catch (e) {
    debug(`bundle unavailable (${String(e?.message ?? e).split("\n")[0]}); from source`);
    return undefined;
  }
}

function readManifest(path) {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return undefined;
  }
}

function upToDate(inputs) {
  try {
    return Object.entries(inputs).every(([path, digest]) => sha256(readFileSync(path)) === digest);
  } catch {
    return false; // a source file is gone
  }
}

async function build(entry, dir) {
  const esbuild = await import("esbuild");
  const inputs = {};
  const result = await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    // `drover/sdk` (the package importing itself) is bundled from source like the rest, not left external.
    alias: { "drover/sdk": join(ROOT, "sdk/index.ts") },
    plugins: [sourceLocation(inputs)],
    logLevel: "silent",
    metafile: true,
    write: false,
    // Split at the dynamic imports (proof, runs): their packages (fastify, mongodb, Kubernetes…) load
    // only when that command runs, as from source; one file would import every package on each start.
    splitting: true,
    outdir: join(dir, "cli"),
    entryNames: "[name]",
    chunkNames: "chunk-[hash]",
    outExtension: { ".js": ".mjs" },
  });
  // Every file in the bundle must have been read (and hashed) by the plugin, or freshness is unknown.
  const read = Object.keys(result.metafile.inputs).map((p) => join(process.cwd(), p));
  if (!read.every((p) => p in inputs)) return undefined;
  const files = result.outputFiles.map((f) => ({ name: basename(f.path), contents: f.contents }));
  const digest = sha256(files.map((f) => `${f.name}\n${sha256(f.contents)}`).join("\n")).slice(0, 16);
  return { bundle: join(`cli-${digest}`, `${basename(entry, extname(entry))}.mjs`), files, inputs };
}

/**
 * A bundle directory named by content: written once, into a temporary directory renamed into place,
 * so a concurrent start never sees half of it (a start that lost the race keeps the other's).
 */
function writeOnce(final, files) {
  if (existsSync(final)) return;
  const tmp = `${final}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  mkdirSync(tmp);
  for (const f of files) writeFileSync(join(tmp, f.name), f.contents);
  try {
    renameSync(tmp, final);
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    if (!existsSync(final)) throw e;
  }
}

function writeAtomically(path, contents) {
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(tmp, contents);
  renameSync(tmp, path);
}
