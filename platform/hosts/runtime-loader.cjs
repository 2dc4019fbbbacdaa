// Starts a runtime process from its CommonJS bundle (runtime-bundle.ts) through a V8 code cache kept
// beside the bundle: `node [flags] runtime-loader.cjs <dir>/runtime-<hash>.cjs`. Plain JS: node runs it
// as it is, before any TypeScript. Node 20 has no compile cache for modules (module.enableCompileCache
// is 22.1), so the bundle is compiled here through vm.Script with `cachedData`; a cached start skips
// compiling the 4 MB bundle and the functions its start runs (docs/decisions.md, session 34).
//
// The cache is a cache, never required: when it is absent or V8 rejects it (another node, other V8
// flags), the bundle compiles from source, exactly as without one, and this process writes a new one
// CODE_CACHE_AFTER_MS after it loaded (unref'd: a process that ends sooner writes none), so that the
// functions its start compiled are in it too. Named by the bundle (itself named by its content) and by
// node's version and flags; written through a temporary file and a rename, so processes side by side
// never read half a file.
//
// The bundle is read as a one-byte (Latin-1) string when it is all ASCII, as runtime-bundle.ts writes
// it: no UTF-8 decoding, and not the two-byte string of the whole 4 MB source that one non-ASCII
// character made of it (twice the memory, longer to read, copy and check against the cache: a start's
// CPU to its configuration check ~12 ms less, session 35). Any other bundle is read as UTF-8, as before.
"use strict";
const { isAscii } = require("node:buffer");
const { createHash } = require("node:crypto");
const { existsSync, readFileSync, renameSync, writeFileSync } = require("node:fs");
const { createRequire } = require("node:module");
const { dirname } = require("node:path");
const { Script } = require("node:vm");

/** How long after loading a process without a usable cache writes one (ms; DROVER_RUNTIME_CODE_CACHE_AFTER_MS). */
const CODE_CACHE_AFTER_MS = 5_000;

/** The cache file of `bundle` for this node and these flags (V8 rejects a cache made under others). */
function codeCacheFile(bundle, version = process.version, execArgv = process.execArgv) {
  const key = createHash("sha256")
    .update(JSON.stringify([version, process.arch, execArgv]))
    .digest("hex");
  return `${bundle}.${key.slice(0, 16)}.v8cache`;
}

/** The bundle's source as one function of CommonJS's module arguments (on its first line: line numbers hold). */
function wrap(source) {
  return `(function (exports, require, module, __filename, __dirname) {${source}\n})`;
}

/** The bundle's source: Latin-1 (one byte a character) when it is ASCII, where that is the same text as UTF-8. */
function readSource(bundle) {
  const bytes = readFileSync(bundle);
  return isAscii(bytes) ? bytes.latin1Slice(0, bytes.length) : bytes.toString("utf8");
}

/** Compiles `bundle` (through its code cache when there is a usable one) and runs it as the main module. */
function start(bundle, env = process.env) {
  const cacheFile = codeCacheFile(bundle);
  let cachedData;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  const script = new Script(wrap(readSource(bundle)), {
    filename: bundle,
    cachedData,
  });
  const rejected = cachedData !== undefined && script.cachedDataRejected === true;
  if (rejected) process.stderr.write(`drover runtime: code cache ${cacheFile} rejected; compiled from source\n`);
  if (env.DROVER_RUNTIME_CODE_CACHE_AT_EXIT === "1") {
    // An image build (k8s/image/build.sh): the cache is written when this start ends, however soon (a runtime
    // without a configuration ends at its check), with every function compiled up to then; a read-only image
    // cannot be written later.
    process.once("exit", () => writeCodeCache(script, cacheFile, true));
  } else if (cachedData === undefined || rejected) {
    const after = Number(env.DROVER_RUNTIME_CODE_CACHE_AFTER_MS ?? CODE_CACHE_AFTER_MS);
    setTimeout(() => writeCodeCache(script, cacheFile, rejected), after).unref();
  }
  const module = { exports: {}, filename: bundle, id: ".", loaded: false };
  script
    .runInThisContext()
    .call(module.exports, module.exports, createRequire(bundle), module, bundle, dirname(bundle));
}

/** Writes the cache unless another process has meanwhile (a rejected one is replaced); never fails the runtime. */
function writeCodeCache(script, cacheFile, replace) {
  try {
    if (!replace && existsSync(cacheFile)) return;
    const tmp = `${cacheFile}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    writeFileSync(tmp, script.createCachedData());
    renameSync(tmp, cacheFile);
  } catch {
    // A cache is an optimisation: a read-only or full disk leaves the next start compiling, as now.
  }
}

/**
 * import() for the bundle (a tenant's worker module: services/runtime/shell/worker-module.ts). Code
 * compiled from a V8 code cache cannot import() in Node 20 (the cached script loses its import callback:
 * ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING; nodejs/node#43663), and a callback of our own would need
 * --experimental-vm-modules: this one is compiled by node's own loader, outside the cache.
 */
function supplyImport() {
  globalThis[Symbol.for("drover.runtime.import")] = (url) => import(url);
}

if (require.main === module) {
  const bundle = process.argv[2];
  // The runtime sees the argv it would have been started directly with: node, its bundle, its arguments.
  process.argv.splice(1, 1);
  supplyImport();
  start(bundle);
} else {
  module.exports = { CODE_CACHE_AFTER_MS, codeCacheFile, readSource, wrap };
}
