import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { BUILTIN_STEP_KINDS, DroverError } from "../../../contracts/index.ts";
import { isWorker, type StepHandler } from "../../../sdk/index.ts";

/** A tenant worker as the runtime runs it: its handlers and the step kinds this runtime offers. */
export interface LoadedWorker {
  readonly handlers: ReadonlyMap<string, StepHandler>;
  /**
   * The worker's version (docs/worker-versions.md), as its registration names it and the step cache
   * keys it: sha256 of the module file's bytes (on process hosts the bundle named by that digest, so
   * every change of the worker or what it bundles changes it; a source file run under tsx covers
   * that file only).
   */
  readonly version: string;
}

/** The kinds a runtime offers: the built-ins plus `custom:<name>` for each handler of its worker. */
export const offeredKinds = (worker: LoadedWorker | undefined): string[] =>
  [...BUILTIN_STEP_KINDS, ...[...(worker?.handlers.keys() ?? [])].map((n) => `custom:${n}`)].sort();

/**
 * import() of a module's URL. A runtime's bundle compiled from its V8 code cache (platform/hosts/
 * runtime-loader.cjs) cannot import(): Node 20 loses a cached script's import callback
 * (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING), so the loader supplies node's own import(), compiled outside
 * the cache. Started any other way (tsx, the Kubernetes image's ES module bundle), import() itself.
 */
function importUrl(url: string): Promise<unknown> {
  const viaLoader = (globalThis as Record<symbol, unknown>)[Symbol.for("drover.runtime.import")];
  return typeof viaLoader === "function" ? (viaLoader as (u: string) => Promise<unknown>)(url) : import(url);
}

/**
 * Imports the tenant's worker module (a bundle the provisioner built, or a source file when the
 * runtime runs under tsx) and checks it: its default export is `defineWorker(...)` and it has every
 * handler the tenant's settings declare (`declared`). Throws `worker-invalid` naming what is wrong;
 * the runtime then refuses to start, so a registration's advertised kinds are always real.
 */
export async function loadWorker(path: string, declared: readonly string[]): Promise<LoadedWorker> {
  let mod: { default?: unknown };
  try {
    mod = (await importUrl(pathToFileURL(isAbsolute(path) ? path : resolve(path)).href)) as { default?: unknown };
  } catch (e) {
    throw new DroverError("worker-invalid", `worker module ${path} does not load: ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (!isWorker(mod.default))
    throw new DroverError("worker-invalid", `worker module ${path} has no defineWorker(...) default export`);
  const handlers = new Map(Object.entries(mod.default.steps));
  const missing = declared.filter((k) => !handlers.has(k));
  if (missing.length > 0)
    throw new DroverError(
      "worker-invalid",
      `worker module ${path} lacks the declared step kinds ${missing.join(", ")}`,
    );
  const file = await readFile(isAbsolute(path) ? path : resolve(path));
  const version = createHash("sha256").update(file).digest("hex");
  return { handlers, version };
}
