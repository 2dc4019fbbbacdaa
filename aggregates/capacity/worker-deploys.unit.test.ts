import { describe, expect, it } from "vitest";
import { RuntimeInstanceId, TenantSettings, type RuntimeWorker } from "../../contracts/index.ts";
import { initialRunState } from "../run.ts";
import { decidePlacement } from "../../services/admission/domain/placement.ts";
import type { Candidate } from "../../services/admission/domain/ranking.ts";
import { deployDecision, foldDeploys } from "./worker-deploys.ts";
import { currentWorkerVersion, drainStates } from "./worker-version.ts";

// Pure folds and decisions over plain values: these tests prove no transport, store or process.
const V1 = "1".repeat(64);
const V2 = "2".repeat(64);
const deployed = (seq: number, version: string, extra: Record<string, unknown> = {}) => ({
  seq,
  event: { type: "worker.deployed", data: { version, kinds: ["work"], ...extra } },
});
const requested = (seq: number, by: string) => ({
  seq,
  event: { type: "worker.deploy-requested", data: { requestedBy: by } },
});
const w = (version: string, deployedAt: string, pinned = false): RuntimeWorker => ({ version, deployedAt, pinned });
const rt = (id: string, worker: RuntimeWorker): Candidate & { endpoint: string } => ({
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
  worker,
});
const T1 = "2026-12-01T00:00:00.000Z";
const T2 = "2026-12-02T00:00:00.000Z";

describe("deploys as events: the deploys fold, the deployer's decision, and current/drain/placement reading the last deploy (pure, no transport)", () => {
  it("the last worker.deployed is current; a request after it is pending until a deploy answers it", () => {
    expect(foldDeploys([], 0)).toEqual({ lastSeq: 0 });
    const s = foldDeploys([deployed(1, V1), requested(2, "tenant:acme"), requested(3, "operator:ops")], 3);
    expect(s.deployed?.data.version).toBe(V1);
    expect(s.pending).toEqual({ seq: 2, requestedBy: "tenant:acme" }); // the oldest unanswered
    const answered = foldDeploys([deployed(1, V1), requested(2, "tenant:acme"), deployed(4, V2)], 4);
    expect(answered.deployed?.seq).toBe(4);
    expect(answered.pending).toBeUndefined();
  });

  it("a deployer appends a new version, appends nothing for the deployed one, and always answers a pending request", () => {
    expect(deployDecision(foldDeploys([], 0), V1)).toBe("append");
    expect(deployDecision(foldDeploys([deployed(1, V1)], 1), V1)).toBe("current");
    expect(deployDecision(foldDeploys([deployed(1, V1)], 1), V2)).toBe("append");
    expect(deployDecision(foldDeploys([deployed(1, V1), requested(2, "tenant:acme")], 2), V1)).toBe("append");
  });

  it("the last deploy is current even when an older version's runtime was started later, and before any runtime runs it", () => {
    // rt-v1 registered after rt-v2 (a later deployedAt): by the deployedAt rule v1 would be current.
    const rts = [rt("rt-v2", w(V2, T1)), rt("rt-v1", w(V1, T2))];
    expect(currentWorkerVersion(rts, "acme")).toBe(V1);
    expect(currentWorkerVersion(rts, "acme", V2)).toBe(V2);
    // Deployed, no runtime of it yet: still current; every runtime of the tenant drains.
    const onlyV1 = [rt("rt-v1", w(V1, T1))];
    expect(currentWorkerVersion(onlyV1, "acme", V2)).toBe(V2);
    expect(drainStates(onlyV1, "acme", () => 3, V2)).toEqual([
      { runtimeInstanceId: "rt-v1", version: V1, draining: true, pinnedRuns: 3, retire: false },
    ]);
    expect(drainStates(onlyV1, "acme", () => 0, V2)[0]!.retire).toBe(true);
    expect(drainStates(onlyV1, "acme", () => 0)[0]!.draining).toBe(false); // never deployed by event: as before
  });

  it("a new run is not placed on a live runtime of the old version once another is deployed: it queues with a scale-out naming the deployed version; a run pinned to the old one still goes there", () => {
    const tenant = TenantSettings.parse({ tenantId: "acme", isolationMode: "dedicated", maxConcurrentRuns: 50 });
    const policy = { tenant, dispatchTimeoutMs: 1000, activeRuns: 0 };
    const fresh = { state: { ...initialRunState(), status: "submitted" as const, lastSeq: 1 }, sinceMs: 0 };
    const onlyV1 = [rt("rt-v1", w(V1, T1))];
    expect(decidePlacement(fresh, onlyV1, 10_000, policy).kind).toBe("place"); // no deploy recorded
    const p = decidePlacement(fresh, onlyV1, 10_000, { ...policy, deployedVersion: V2 });
    expect(p.kind).toBe("queue-with-scale-out");
    expect(p.kind === "queue-with-scale-out" && p.reason.detail).toContain(
      `deployed worker version ${V2.slice(0, 12)}`,
    );
    const pinned = { ...fresh, state: { ...fresh.state, workerVersion: V1 } };
    const q = decidePlacement(pinned, onlyV1, 10_000, { ...policy, deployedVersion: V2 });
    expect(q.kind === "place" && q.tryInOrder.map((c) => c.runtimeInstanceId)).toEqual(["rt-v1"]);
    const both = [...onlyV1, rt("rt-v2", w(V2, T1))];
    const r = decidePlacement(fresh, both, 10_000, { ...policy, deployedVersion: V2 });
    expect(r.kind === "place" && r.tryInOrder.map((c) => c.runtimeInstanceId)).toEqual(["rt-v2"]);
  });
});
