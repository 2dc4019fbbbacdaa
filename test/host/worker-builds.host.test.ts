import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isDroverError } from "../../contracts/index.ts";
import { bundledWorker, sourceWorker } from "../../platform/hosts/worker-builds.ts";

// Boundary: the real esbuild bundler and file system the provisioner builds tenant workers with
// (docs/worker-versions.md); no NATS, no runtime process.
const ROOT = resolve(import.meta.dirname, "../..");
const DIR = join(ROOT, ".run", `wb-host-${randomBytes(4).toString("hex")}`);
const MODULE = join(DIR, "worker.ts");
const source = (tag: string) =>
  `import { defineWorker } from "../../sdk/index.ts";\nexport default defineWorker({ steps: { work: () => ({ ran: "${tag}" }) } });\n`;
afterAll(() => rmSync(DIR, { recursive: true, force: true }));

describe("worker builds on process hosts: versions are bundle digests, pinned versions start from their own bundle (real esbuild and files)", () => {
  it("a deploy names the bundle by its digest; a changed module is a new version; the old version is still found by digest, pinned, with its own deployedAt; a rollback is deployed again; an unknown version is worker-invalid", () => {
    mkdirSync(DIR, { recursive: true });
    writeFileSync(MODULE, source("v1"));
    const v1 = bundledWorker(MODULE);
    expect(v1.worker.version).toBe(createHash("sha256").update(readFileSync(v1.path)).digest("hex"));
    expect(v1.path).toBe(join(ROOT, ".run/build", `worker-${v1.worker.version}.mjs`));
    expect(v1.worker.pinned).toBe(false);
    writeFileSync(MODULE, source("v2"));
    const v2 = bundledWorker(MODULE);
    expect(v2.worker.version).not.toBe(v1.worker.version);
    const again = bundledWorker(MODULE, v1.worker.version);
    expect(again).toEqual({
      path: v1.path,
      worker: { version: v1.worker.version, deployedAt: statSync(v1.path).mtime.toISOString(), pinned: true },
    });
    expect(readFileSync(again.path, "utf8")).toContain('"v1"');
    // The current version asked for by version (a crash's resumed runs): a normal runtime, not a drained one.
    expect(bundledWorker(MODULE, v2.worker.version)).toEqual({
      path: v2.path,
      worker: { version: v2.worker.version, deployedAt: statSync(v2.path).mtime.toISOString(), pinned: false },
    });
    // A rollback (v1's module again) is a new deploy of v1: same bundle, a deployedAt after v2's.
    writeFileSync(MODULE, source("v1"));
    const rollback = bundledWorker(MODULE);
    expect(rollback.worker.version).toBe(v1.worker.version);
    expect(rollback.worker.deployedAt >= v2.worker.deployedAt).toBe(true);
    expect(statSync(v1.path).mtime.toISOString()).toBe(rollback.worker.deployedAt);
    let err: unknown;
    try {
      bundledWorker(MODULE, "f".repeat(64));
    } catch (e) {
      err = e;
    }
    expect(isDroverError(err, "worker-invalid")).toBe(true);
  });

  it("without a bundler the version is the source file's digest, and only the file's current version can start (a normal runtime, never a drained one)", () => {
    writeFileSync(MODULE, source("v3"));
    const now = sourceWorker(MODULE);
    expect(now.worker.version).toBe(createHash("sha256").update(readFileSync(MODULE)).digest("hex"));
    expect(sourceWorker(MODULE, now.worker.version).worker).toMatchObject({
      pinned: false,
      version: now.worker.version,
    });
    expect(() => sourceWorker(MODULE, "0".repeat(64))).toThrow(/cannot be started/);
  });
});
