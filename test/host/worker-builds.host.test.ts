import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isDroverError } from "../../contracts/index.ts";
import { workerBundle } from "../../platform/hosts/runtime-bundle.ts";
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
  it("a deploy names the bundle by its digest; a changed module is a new version; the old version is still found by digest, pinned, with its own deployedAt; a rollback is deployed again; an unknown version is worker-invalid", async () => {
    mkdirSync(DIR, { recursive: true });
    writeFileSync(MODULE, source("v1"));
    const v1 = await bundledWorker(MODULE);
    expect(v1.worker.version).toBe(createHash("sha256").update(readFileSync(v1.path)).digest("hex"));
    expect(v1.path).toBe(join(ROOT, ".run/build", `worker-${v1.worker.version}.mjs`));
    expect(v1.worker.pinned).toBe(false);
    writeFileSync(MODULE, source("v2"));
    const v2 = await bundledWorker(MODULE);
    expect(v2.worker.version).not.toBe(v1.worker.version);
    const again = await bundledWorker(MODULE, v1.worker.version);
    expect(again).toEqual({
      path: v1.path,
      worker: { version: v1.worker.version, deployedAt: statSync(v1.path).mtime.toISOString(), pinned: true },
    });
    expect(readFileSync(again.path, "utf8")).toContain('"v1"');
    // The current version asked for by version (a crash's resumed runs): a normal runtime, not a drained one.
    expect(await bundledWorker(MODULE, v2.worker.version)).toEqual({
      path: v2.path,
      worker: { version: v2.worker.version, deployedAt: statSync(v2.path).mtime.toISOString(), pinned: false },
    });
    // A rollback (v1's module again) is a new deploy of v1: same bundle, a deployedAt after v2's.
    writeFileSync(MODULE, source("v1"));
    const rollback = await bundledWorker(MODULE);
    expect(rollback.worker.version).toBe(v1.worker.version);
    expect(rollback.worker.deployedAt >= v2.worker.deployedAt).toBe(true);
    expect(statSync(v1.path).mtime.toISOString()).toBe(rollback.worker.deployedAt);
    let err: unknown;
    try {
      await bundledWorker(MODULE, "f".repeat(64));
    } catch (e) {
      err = e;
    }
    expect(isDroverError(err, "worker-invalid")).toBe(true);
  });

  it("without a bundler the version is the source file's digest, and only the file's current version can start (a normal runtime, never a drained one)", async () => {
    writeFileSync(MODULE, source("v3"));
    const now = await sourceWorker(MODULE);
    expect(now.worker.version).toBe(createHash("sha256").update(readFileSync(MODULE)).digest("hex"));
    expect((await sourceWorker(MODULE, now.worker.version)).worker).toMatchObject({
      pinned: false,
      version: now.worker.version,
    });
    await expect(sourceWorker(MODULE, "0".repeat(64))).rejects.toThrow(/cannot be started/);
  });

  it("a build leaves the caller's event loop running (esbuild works in its own process), and callers asking for the same module meanwhile share that one build", async () => {
    writeFileSync(MODULE, source("v4"));
    const order: string[] = [];
    setImmediate(() => order.push("loop turned"));
    const first = workerBundle(MODULE);
    const second = workerBundle(MODULE);
    expect(second).toBe(first);
    const path = await first.then((p) => (order.push("built"), p));
    expect(order).toEqual(["loop turned", "built"]);
    expect(readFileSync(path, "utf8")).toContain('"v4"');
    // Once built, the next call builds the module as it is then (a deploy is the module now).
    writeFileSync(MODULE, source("v5"));
    const next = workerBundle(MODULE);
    expect(next).not.toBe(first);
    expect(readFileSync(await next, "utf8")).toContain('"v5"');
  });
});
