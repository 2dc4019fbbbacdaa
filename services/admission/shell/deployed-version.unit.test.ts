import { describe, expect, it } from "vitest";
import { RuntimeInstanceId } from "../../../contracts/index.ts";
import { initialRunState } from "../../../aggregates/run.ts";
import type { Candidate } from "../domain/ranking.ts";
import { deployedVersionFor } from "./deployed-version.ts";
import type { IndexedRun } from "./run-index.ts";

// The read is a counting function over plain values: this test proves no transport.
const V1 = "1".repeat(64);
const V2 = "2".repeat(64);
const cand = (tenantId: string, withWorker: boolean): Candidate =>
  ({
    runtimeInstanceId: RuntimeInstanceId.parse(`rt-${tenantId}-1`),
    isolationMode: "dedicated",
    tenantId,
    status: "ready",
    ...(withWorker ? { worker: { version: V1, deployedAt: "2026-12-01T00:00:00.000Z", pinned: false } } : {}),
  }) as Candidate;
const run = (tenantId: string, workerVersion?: string) =>
  ({
    tenantId,
    sharedRunId: "r1",
    state: { ...initialRunState(), status: "submitted", ...(workerVersion ? { workerVersion } : {}) },
    sinceSeq: 1,
    sinceMs: 0,
  }) as IndexedRun;

describe("admission's read of the deployed worker version (no transport: a counting read)", () => {
  it("reads only for an unpinned run whose tenant has a worker runtime among the candidates", async () => {
    const reads: string[] = [];
    const read = async (t: string) => {
      reads.push(t);
      return V2;
    };
    expect(await deployedVersionFor(read, run("acme"), [cand("acme", true)])).toBe(V2);
    expect(await deployedVersionFor(read, run("acme", V1), [cand("acme", true)])).toBeUndefined(); // pinned
    expect(await deployedVersionFor(read, run("acme"), [cand("acme", false)])).toBeUndefined(); // no worker
    expect(await deployedVersionFor(read, run("acme"), [cand("globex", true)])).toBeUndefined(); // another tenant's
    expect(await deployedVersionFor(undefined, run("acme"), [cand("acme", true)])).toBeUndefined();
    expect(reads).toEqual(["acme"]);
  });
});
