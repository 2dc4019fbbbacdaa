import { describe, expect, it } from "vitest";
import { RuntimeInstanceId, TenantSettings, type RuntimeWorker } from "../../contracts/index.ts";
import { initialRunState, type RunState } from "../run.ts";
import { decidePlacement } from "../../services/admission/domain/placement.ts";
import type { Candidate } from "../../services/admission/domain/ranking.ts";
import { currentWorkerVersion, drainStates, runnableByVersion } from "./worker-version.ts";

// Pure decisions over plain values: these tests prove no transport, store or process.
const V1 = "1".repeat(64);
const V2 = "2".repeat(64);
const worker = (version: string, deployedAt: string, pinned = false): RuntimeWorker => ({
  version,
  deployedAt,
  pinned,
});
const tenant = TenantSettings.parse({ tenantId: "acme", isolationMode: "dedicated", maxConcurrentRuns: 50 });
const rt = (
  id: string,
  w: RuntimeWorker | undefined,
  patch: Partial<Candidate> = {},
): Candidate & { endpoint: string } => ({
  runtimeInstanceId: RuntimeInstanceId.parse(id),
  isolationMode: "dedicated",
  tenantId: "acme",
  canAcceptRun: true,
  reasons: [],
  effectiveAvailableSlots: 4,
  availableWorkers: 2,
  runningRuns: 0,
  queuedRuns: 0,
  lastHeartbeatAt: 1,
  status: "ready",
  endpoint: `http://127.0.0.1:1/${id}`,
  ...(w ? { worker: w } : {}),
  ...patch,
});
const T1 = "2026-12-01T00:00:00.000Z";
const T2 = "2026-12-02T00:00:00.000Z";
const policy = { tenant, dispatchTimeoutMs: 1000, activeRuns: 0 };
const run = (state: Partial<RunState>) => ({
  state: { ...initialRunState(), status: "submitted" as const, lastSeq: 1, ...state },
  sinceMs: 0,
});
const placedOn = (p: ReturnType<typeof decidePlacement>) =>
  p.kind === "place" ? p.tryInOrder.map((c) => c.runtimeInstanceId) : p.kind;

describe("worker versions: current version, pinned placement, drain states (pure decisions, no transport)", () => {
  it("the current version is the one deployed last among the tenant's live, non-pinned runtimes", () => {
    const rts = [rt("rt-v1", worker(V1, T1)), rt("rt-v2", worker(V2, T2))];
    expect(currentWorkerVersion(rts, "acme")).toBe(V2);
    // A runtime started for pinned runs never makes its old version current again, however late it started.
    expect(currentWorkerVersion([rt("rt-v2", worker(V2, T1)), rt("rt-v1p", worker(V1, T2, true))], "acme")).toBe(V2);
    expect(
      currentWorkerVersion([rt("rt-v2", worker(V2, T2), { status: "fenced" }), rt("rt-v1", worker(V1, T1))], "acme"),
    ).toBe(V1);
    expect(currentWorkerVersion(rts, "globex")).toBeUndefined();
  });

  it("a pinned run goes only to runtimes of its version (pinned or not); a new run only to non-pinned runtimes of the current version; runtimes without a worker always pass", () => {
    const rts = [
      rt("rt-v1", worker(V1, T1)),
      rt("rt-v1p", worker(V1, T1, true)),
      rt("rt-v2", worker(V2, T2)),
      rt("rt-b", undefined),
    ];
    expect(runnableByVersion(rts, V1, undefined).map((c) => c.runtimeInstanceId)).toEqual(["rt-v1", "rt-v1p", "rt-b"]);
    expect(runnableByVersion(rts, undefined, V2).map((c) => c.runtimeInstanceId)).toEqual(["rt-v2", "rt-b"]);
  });

  it("placement: a started run pinned to v1 is placed on v1's runtime though v2 has more room; a new run on v2's; a pinned run with no runtime of its version queues with a scale-out naming it", () => {
    const rts = [rt("rt-v1", worker(V1, T1), { effectiveAvailableSlots: 1 }), rt("rt-v2", worker(V2, T2))];
    expect(
      placedOn(decidePlacement(run({ workerVersion: V1, status: "requeued-for-resume" }), rts, 0, policy)),
    ).toEqual(["rt-v1"]);
    expect(placedOn(decidePlacement(run({}), rts, 0, policy))).toEqual(["rt-v2"]);
    const onlyV2 = decidePlacement(run({ workerVersion: V1 }), [rt("rt-v2", worker(V2, T2))], 0, policy);
    expect(onlyV2.kind).toBe("queue-with-scale-out");
    expect(onlyV2.kind === "queue-with-scale-out" && onlyV2.reason.detail).toContain(
      `pinned to worker version ${V1.slice(0, 12)}`,
    );
  });

  it("a new run never lands on a runtime started for pinned runs, even when it is the only one: it queues for a runtime of the current version", () => {
    expect(decidePlacement(run({}), [rt("rt-v1p", worker(V1, T1, true))], 0, policy).kind).toBe("queue-with-scale-out");
  });

  it("drain: runtimes of an old version (and pinned ones) drain, show their pinned runs, and are to be retired at zero; the current version's never are", () => {
    const rts = [rt("rt-v1", worker(V1, T1)), rt("rt-v1p", worker(V1, T1, true)), rt("rt-v2", worker(V2, T2))];
    const runs: Record<string, number> = { "rt-v1": 3, "rt-v1p": 0, "rt-v2": 0 };
    expect(drainStates(rts, "acme", (id) => runs[id]!)).toEqual([
      { runtimeInstanceId: "rt-v1", version: V1, draining: true, pinnedRuns: 3, retire: false },
      { runtimeInstanceId: "rt-v1p", version: V1, draining: true, pinnedRuns: 0, retire: true },
      { runtimeInstanceId: "rt-v2", version: V2, draining: false, pinnedRuns: 0, retire: false },
    ]);
  });
});
