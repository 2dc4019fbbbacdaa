import { createHash } from "node:crypto";
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { build, buildSync } from "esbuild";
import { cpuProfFlags, nodeFlags } from "../node-flags.ts";

const ROOT = resolve(import.meta.dirname, "../..");
/** Starts a runtime from its CommonJS bundle through a V8 code cache beside it (runtime-loader.cjs). */
export const RUNTIME_LOADER = resolve(import.meta.dirname, "runtime-loader.cjs");

/**
 * The argv that starts a runtime process. The provisioner bundles services/runtime/main.ts into one
 * file at start-up, which halves a runtime's cold start (measured ≈730 → ≈365 ms to the listening
 * line) and avoids a tsx compiler process per runtime. npm packages are bundled in as well (one 4 MB
 * file, nothing resolved across node_modules when a runtime starts): a runtime's CPU up to its
 * configuration check fell from 0.39–0.43 s to 0.23–0.26 s (session 33; docs/decisions.md). The
 * bundle is CommonJS, started by runtime-loader.cjs through a V8 code cache that the first runtime of
 * a bundle writes beside it (session 34: CPU to the configuration check 0.28 → 0.20 s at load ~30).
 * It is written in ASCII (`asciiSource`), which the loader reads as a one-byte string (session 35:
 * CPU to the configuration check 128 → 116 ms on a quiet core, a pooled member's to its listening line 187 → 173).
 * The bundle and its code cache are caches, never required: if the bundle cannot be built, runtimes
 * start from source through tsx, exactly as before.
 */
export function runtimeCommand(onFallback?: (why: string) => void): readonly string[] {
  // The same node/V8 flags wherever a runtime starts, and its CPU profile as the services' (platform/node-flags.ts).
  const node = [process.execPath, ...nodeFlags("runtime"), ...cpuProfFlags("runtime")];
  const fromSource = [...node, "--import", "tsx", resolve(ROOT, "services/runtime/main.ts")];
  if (process.env.DROVER_RUNTIME_FROM_SOURCE === "1") return fromSource;
  try {
    const dir = resolve(ROOT, ".run/build");
    mkdirSync(dir, { recursive: true });
    const contents = runtimeBundle();
    // Named by content: provisioners running side by side share one file, and a changed source gets a new one.
    const outfile = resolve(dir, `runtime-${createHash("sha256").update(contents).digest("hex").slice(0, 16)}.cjs`);
    writeOnce(outfile, contents);
    return [...node, RUNTIME_LOADER, outfile];
  } catch (e) {
    onFallback?.(String((e as Error).message ?? e).slice(0, 300));
    return fromSource;
  }
}

/**
 * services/runtime/main.ts as one self-contained CommonJS file in ASCII, the file runtime-loader.cjs
 * starts: for process hosts (runtimeCommand) and in the Kubernetes runtime image (k8s/image/build.sh).
 */
export function runtimeBundle(): Buffer {
  const out = buildSync({
    entryPoints: [resolve(ROOT, "services/runtime/main.ts")],
    bundle: true,
    platform: "node",
    // CommonJS, so that it compiles through vm.Script and its code cache (ES modules cannot in Node 20);
    // strict throughout, as the ES module bundle was. npm packages bundled in too (no `packages: "external"`).
    format: "cjs",
    banner: { js: '"use strict";' },
    target: "node20",
    logLevel: "silent",
    write: false,
    outfile: resolve(ROOT, ".run/build/runtime.cjs"),
  }).outputFiles[0]!;
  return Buffer.from(asciiSource(out.text));
}

/**
 * `source` with each non-ASCII character written as a `\uXXXX` escape, so that the loader reads the
 * bundle as a one-byte string (runtime-loader.cjs `readSource`). esbuild escapes strings and names
 * itself; what it copies as written is comments and regular expression literals (a `µs` unit, an
 * author's name), where the escape means the same character (a surrogate pair as two escapes means
 * one code point in a `u` expression too). Returned as it is when it holds a line or paragraph
 * separator (a line end inside a comment: escaped, the rest of its line would become a comment) or
 * a non-ASCII character after a backslash (`\µ`, whose escape would read as `\\u00b5`): the loader
 * then reads it as UTF-8, as before.
 */
export function asciiSource(source: string): string {
  if (/[\u2028\u2029]|\\[\u0080-\uffff]/.test(source)) return source;
  return source.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * Bundles a tenant's worker module (docs/sdk.md) into one ESM file under .run/build, named by
 * the sha256 of its content (`worker-<version>.mjs`), with `drover/sdk` bundled in (the SDK has no dependencies) and npm packages left
 * external. `module` is a path relative to the working directory (or absolute). Rejects with esbuild's
 * message when the module does not build; the caller records `worker-invalid`.
 * Asynchronous: esbuild works in its own process while the provisioner's loop goes on (buildSync held
 * it 5–130 ms per start at load ~13: claims, auth callouts and command probes of every other start
 * waited). Callers asking for the same module while its build is in flight share that build; a later
 * call builds again (a deploy is the module as it is now).
 */
export function workerBundle(module: string): Promise<string> {
  const entry = resolve(module);
  const inFlight = building.get(entry);
  if (inFlight) return inFlight;
  const p = bundleOnce(entry).finally(() => building.delete(entry));
  building.set(entry, p);
  return p;
}

const building = new Map<string, Promise<string>>();

async function bundleOnce(entry: string): Promise<string> {
  const dir = resolve(ROOT, ".run/build");
  mkdirSync(dir, { recursive: true });
  const out = (
    await build({
      entryPoints: [entry],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      packages: "external",
      alias: { "drover/sdk": resolve(ROOT, "sdk/index.ts") },
      logLevel: "silent",
      write: false,
      outfile: resolve(dir, "worker.mjs"),
    })
  ).outputFiles[0]!;
  // Named by its full digest, the worker version (docs/worker-versions.md): a pinned start finds it by version.
  const outfile = resolve(dir, `worker-${createHash("sha256").update(out.contents).digest("hex")}.mjs`);
  writeOnce(outfile, out.contents);
  return outfile;
}

/**
 * Writes a bundle named by its content unless it is there already: through a temporary file and a
 * rename, so a reader (another provisioner, a runtime starting) never sees half a file, and writers
 * side by side (processes, or builds in one process) each use their own temporary name.
 */
export function writeOnce(outfile: string, contents: Uint8Array): void {
  if (existsSync(outfile)) return;
  const tmp = `${outfile}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(tmp, contents);
  renameSync(tmp, outfile);
}
