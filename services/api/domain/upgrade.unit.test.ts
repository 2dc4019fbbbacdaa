import { describe, expect, it } from "vitest";
import { initialRunState, type RunState } from "../../../aggregates/run.ts";
import { DagDefinition, isDroverError, SharedRunId, TenantId } from "../../../contracts/index.ts";
import { decideUpgrade, remainingKinds, type UpgradeRuntime } from "./upgrade.ts";

const V1 = "1".repeat(64);
const V2 = "2".repeat(64);
const V3 = "3".repeat(64);
const dag = DagDefinition.parse({
  name: "u",
  steps: [
    { id: "a", kind: "custom", handler: "legacy", params: {} },
    { id: "b", kind: "custom", handler: "work", params: {}, dependsOn: ["a"] },
    { id: "c", kind: "sleep", params: { durationMs: 1 }, dependsOn: ["b"] },
  ],
});
const run = (patch: Partial<RunState> = {}): RunState => ({
  ...initialRunState(),
  status: "started",
  sharedRunId: SharedRunId.parse("r-1"),
  tenantId: TenantId.parse("acme"),
  dag,
  workerVersion: V1,
  ...patch,
});
const rt = (id: string, version: string, deployedAt: string, kinds: string[], patch: Partial<UpgradeRuntime> = {}) => ({
  runtimeInstanceId: id,
  tenantId: "acme",
  status: "ready",
  worker: { version, deployedAt, pinned: false },
  stepKinds: ["sleep", ...kinds.map((k) => `custom:${k}`)],
  ...patch,
});
const runtimes = [
  rt("rt-1", V1, "2026-01-01T00:00:00.000Z", ["legacy", "work"], { status: "retired" }),
  rt("rt-2", V2, "2026-01-02T00:00:00.000Z", ["work"]),
];
const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    if (isDroverError(e)) return { code: e.code, details: e.details };
    throw e;
  }
  throw new Error("not refused");
};

describe("upgrade decision: a pinned run moves only to a newer version offering its remaining steps' kinds (pure: proves no transport)", () => {
  it("refuses a version lacking a kind a remaining step needs, naming the missing kinds", () => {
    const r = refusal(() => decideUpgrade(run(), [], runtimes, V2));
    expect(r.code).toBe("upgrade-missing-kinds");
    expect(r.details).toMatchObject({ missingKinds: ["custom:legacy"], fromVersion: V1, toVersion: V2 });
  });

  it("accepts once the steps needing the missing kind completed (or were skipped); default target: the current version", () => {
    expect(remainingKinds(run(), [{ id: "a", state: "completed" }])).toEqual(["custom:work", "sleep"]);
    expect(decideUpgrade(run(), [{ id: "a", state: "completed" }], runtimes, undefined)).toEqual({
      outcome: "upgrade",
      fromVersion: V1,
      toVersion: V2,
      kinds: ["custom:work", "sleep"],
    });
    expect(decideUpgrade(run(), [{ id: "a", state: "skipped" }], runtimes, V2).outcome).toBe("upgrade");
    // A failed (or running) step still remains: it would run again on the new version.
    expect(refusal(() => decideUpgrade(run(), [{ id: "a", state: "running" }], runtimes, V2)).code).toBe(
      "upgrade-missing-kinds",
    );
  });

  it("answers already-on-version for the pinned version, refuses an older, unknown or other tenant's version", () => {
    expect(decideUpgrade(run({ workerVersion: V2 }), [], runtimes, V2)).toEqual({
      outcome: "already-on-version",
      version: V2,
    });
    expect(refusal(() => decideUpgrade(run({ workerVersion: V2 }), [], runtimes, V1)).code).toBe(
      "worker-version-not-newer",
    );
    expect(refusal(() => decideUpgrade(run(), [], runtimes, V3)).code).toBe("worker-version-unknown");
    const others = [
      ...runtimes,
      rt("rt-9", V3, "2026-02-01T00:00:00.000Z", ["legacy", "work"], { tenantId: "globex" }),
    ];
    expect(refusal(() => decideUpgrade(run(), [], others, V3)).code).toBe("worker-version-unknown");
    expect(refusal(() => decideUpgrade(run(), [], [runtimes[0]!], undefined)).code).toBe("worker-version-unknown");
  });

  it("refuses an unstarted (unpinned) run and an ended one", () => {
    expect(refusal(() => decideUpgrade(run({ status: "queued", workerVersion: undefined }), [], runtimes, V2))).toEqual(
      { code: "run-not-pinned", details: { sharedRunId: "r-1", status: "queued" } },
    );
    expect(refusal(() => decideUpgrade(run({ status: "completed" }), [], runtimes, V2)).code).toBe("run-terminal");
  });
});
