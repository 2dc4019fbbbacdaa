import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync, utimesSync } from "node:fs";
import { resolve } from "node:path";
import { DroverError, type RuntimeWorker } from "../../contracts/index.ts";
import { workerBundle } from "./runtime-bundle.ts";

const ROOT = resolve(import.meta.dirname, "../..");

/** The worker module a runtime is to import, and the worker its registration names. */
export interface WorkerBuild {
  readonly path: string;
  readonly worker: RuntimeWorker;
}

/**
 * Finds or builds a tenant worker for a process host (docs/worker-versions.md). Without `version`:
 * the tenant's current worker, built from `module` now and recorded as deployed now. With it: the
 * build of that version (for runs pinned to it), which must still be on this machine — a pinned
 * (draining) runtime only when that version is no longer the current build.
 */
export type BuildWorker = (module: string, version?: string) => Promise<WorkerBuild>;

/** The sha256 (hex) of a worker module file's bytes: its worker version. */
export const workerVersionOfFile = (path: string): string =>
  createHash("sha256")
    .update(readFileSync(resolve(path)))
    .digest("hex");

const unavailable = (version: string, why: string) =>
  new DroverError("worker-invalid", `worker version ${version} cannot be started: ${why}`);

/**
 * Process hosts' builds: esbuild bundles named by their digest under .run/build (runtime-bundle.ts).
 * A deploy touches the bundle's mtime, which is its `deployedAt`: a version built again (a rollback)
 * is deployed again. A pinned start reads the mtime and touches nothing.
 */
export const bundledWorker: BuildWorker = async (module, version) => {
  if (version === undefined) {
    const path = await workerBundle(module);
    const now = new Date();
    utimesSync(path, now, now);
    return { path, worker: { version: workerVersionOfFile(path), deployedAt: now.toISOString(), pinned: false } };
  }
  // Still the current build: a normal runtime (it takes new runs too), not a drained one. Pinning a
  // replacement started for a crash's resumed runs made every recovery start a second runtime for
  // the tenant's new runs, and retire the first once its runs ended.
  const current = await workerBundle(module);
  if (workerVersionOfFile(current) === version)
    return { path: current, worker: { version, deployedAt: statSync(current).mtime.toISOString(), pinned: false } };
  const path = resolve(ROOT, ".run/build", `worker-${version}.mjs`);
  if (!existsSync(path)) throw unavailable(version, `its bundle ${path} is not on this host`);
  if (workerVersionOfFile(path) !== version) throw unavailable(version, `its bundle ${path} has another digest`);
  return { path, worker: { version, deployedAt: statSync(path).mtime.toISOString(), pinned: true } };
};

/**
 * Builds without a bundler (a provisioner whose runtimes import the source under tsx, in tests):
 * the version is the source file's digest, so only its current content can be started.
 */
export const sourceWorker: BuildWorker = async (module, version) => {
  const current = workerVersionOfFile(module);
  if (version !== undefined && version !== current)
    throw unavailable(version, `the source ${module} is now version ${current}`);
  const deployedAt = (version === undefined ? new Date() : statSync(resolve(module)).mtime).toISOString();
  // Only the current version can start, so it is never a drained (pinned) runtime.
  return { path: module, worker: { version: current, deployedAt, pinned: false } };
};
