import { describe, expect, it } from "vitest";
import { LocalRunId, RuntimeInstanceId, TenantSettings } from "../../../contracts/index.ts";
import { initialRunState, type RunState } from "../../../aggregates/run.ts";
import { decidePlacement, type PlacementPolicy, type PlacementRun } from "./placement.ts";
import type { Candidate } from "./ranking.ts";

type C = Candidate & { readonly endpoint?: string };
const NOW = 1_000_000;
const tenant = TenantSettings.parse({ tenantId: "t-blue", isolationMode: "shared", maxConcurrentRuns: 3 });
const policy = (patch: Partial<PlacementPolicy> = {}): PlacementPolicy => ({
  tenant,
  dispatchTimeoutMs: 1000,
  activeRuns: 0,
  ...patch,
});
const runtime = (id: string, slots: number, patch: Partial<C> = {}): C => ({
  runtimeInstanceId: RuntimeInstanceId.parse(id),
  isolationMode: "shared",
  canAcceptRun: slots > 0,
  reasons: slots > 0 ? [] : ["no-slots"],
  effectiveAvailableSlots: slots,
  availableWorkers: 2,
  runningRuns: 0,
  queuedRuns: 0,
  lastHeartbeatAt: NOW - 100,
  status: "ready",
  endpoint: `http://127.0.0.1:1/${id}`,
  ...patch,
});
const given = (state: Partial<RunState>, patch: Partial<PlacementRun> = {}): PlacementRun => ({
  state: { ...initialRunState(), status: "submitted", lastSeq: 1, ...state },
  sinceMs: NOW - 10,
  ...patch,
});
const placement = {
  runtimeInstanceId: RuntimeInstanceId.parse("rt-a"),
  localRunId: LocalRunId.parse("lr-1"),
  admittedSeq: 2,
};

describe("admission placement decider (given/when/then; pure, proves no transport)", () => {
  it("given an invalid submission, when placed, then it is rejected", () => {
    const run = given({ status: "none" }, { invalid: { seq: 1, error: "not JSON" } });
    expect(decidePlacement(run, [runtime("rt-a", 4)], NOW, policy())).toEqual({ kind: "reject-invalid" });
  });

  it("given a run admitted moments ago, then it waits; given one admitted longer than 2 × dispatchTimeoutMs, then its dispatch is finished on its runtime (or recorded as failed when the runtime is gone)", () => {
    const fresh = given({ status: "admitted", placement });
    expect(decidePlacement(fresh, [runtime("rt-a", 4)], NOW, policy()).kind).toBe("wait");
    const stale = given({ status: "admitted", placement }, { sinceMs: NOW - 2001 });
    expect(decidePlacement(stale, [runtime("rt-a", 4)], NOW, policy())).toMatchObject({
      kind: "finish-dispatch",
      target: { runtimeInstanceId: "rt-a" },
    });
    expect(decidePlacement(stale, [runtime("rt-b", 4)], NOW, policy())).toEqual({ kind: "finish-dispatch" });
  });

  it("given a run dispatched long ago and never started, then admission checks with its runtime, at most once per 2 × dispatchTimeoutMs, and only while it has an endpoint", () => {
    const stale = { sinceMs: NOW - 5000 };
    const dispatched = { status: "dispatched" as const, placement: { ...placement, dispatchedSeq: 3 } };
    expect(decidePlacement(given(dispatched, stale), [runtime("rt-a", 4)], NOW, policy())).toMatchObject({
      kind: "check-dispatched",
      target: { runtimeInstanceId: "rt-a" },
    });
    const checked = given(dispatched, { ...stale, checkedMs: NOW - 1000 });
    expect(decidePlacement(checked, [runtime("rt-a", 4)], NOW, policy()).kind).toBe("wait");
    const noEndpoint = runtime("rt-a", 4, { endpoint: undefined });
    expect(decidePlacement(given(dispatched, stale), [noEndpoint], NOW, policy()).kind).toBe("wait");
    expect(decidePlacement(given(dispatched), [runtime("rt-a", 4)], NOW, policy()).kind).toBe("wait");
  });

  it("given a tenant at its quota, then a new run is queued (or rejected when the tenant rejects), and a recovery item is placed anyway", () => {
    const atQuota = policy({ activeRuns: 3 });
    expect(decidePlacement(given({}), [runtime("rt-a", 4)], NOW, atQuota)).toMatchObject({
      kind: "queue",
      reason: { code: "tenant-quota-exceeded" },
    });
    const rejecting = policy({ activeRuns: 3, tenant: TenantSettings.parse({ ...tenant, overQuota: "reject" }) });
    expect(decidePlacement(given({}), [runtime("rt-a", 4)], NOW, rejecting).kind).toBe("reject");
    const recovery = given({ status: "requeued-for-resume", recoveryPending: true });
    expect(decidePlacement(recovery, [runtime("rt-a", 4)], NOW, atQuota).kind).toBe("place");
  });

  it("given dispatch failures, then the run backs off 100 ms × 2^n (capped at 10 s) and then avoids the runtime that last refused it while another is eligible", () => {
    const failed = { dispatchFailures: 3, lastFailedRuntimeId: RuntimeInstanceId.parse("rt-a") };
    expect(decidePlacement(given(failed, { sinceMs: NOW - 700 }), [runtime("rt-a", 9)], NOW, policy())).toMatchObject({
      kind: "wait",
    });
    const after = given(failed, { sinceMs: NOW - 801 });
    const both = decidePlacement(after, [runtime("rt-a", 9), runtime("rt-b", 1)], NOW, policy());
    expect(both.kind === "place" && both.tryInOrder.map((c) => c.runtimeInstanceId)).toEqual(["rt-b"]);
    const onlyA = decidePlacement(after, [runtime("rt-a", 9)], NOW, policy());
    expect(onlyA.kind === "place" && onlyA.tryInOrder.map((c) => c.runtimeInstanceId)).toEqual(["rt-a"]);
    const capped = given({ dispatchFailures: 20 }, { sinceMs: NOW - 9_999 });
    expect(decidePlacement(capped, [runtime("rt-a", 9)], NOW, policy()).kind).toBe("wait");
    expect(
      decidePlacement(given({ dispatchFailures: 20 }, { sinceMs: NOW - 10_001 }), [runtime("rt-a", 9)], NOW, policy())
        .kind,
    ).toBe("place");
  });

  it("given visible capacity, then the ranked candidates are tried best first and the admitted event's snapshot holds the top 8", () => {
    const rts = Array.from({ length: 10 }, (_, i) => runtime(`rt-${i}`, i + 1));
    const p = decidePlacement(given({}), rts, NOW, policy());
    expect(p.kind).toBe("place");
    if (p.kind !== "place") return;
    expect(p.tryInOrder.map((c) => c.runtimeInstanceId)).toEqual(rts.map((r) => r.runtimeInstanceId).reverse());
    expect(p.snapshot).toHaveLength(8);
    expect(p.snapshot[0]).toEqual({ runtimeInstanceId: "rt-9", rank: 0, why: expect.stringContaining("slots=10") });
  });

  it("given no runtime that can take the run, then it queues with a scale-out and the reason names what the tenant can see", () => {
    expect(decidePlacement(given({}), [], NOW, policy())).toEqual({
      kind: "queue-with-scale-out",
      reason: { code: "no-visible-capacity", detail: "no runtime visible to tenant t-blue (isolation shared)" },
    });
    const full = decidePlacement(given({ status: "queued" }), [runtime("rt-a", 0)], NOW, policy());
    expect(full).toEqual({
      kind: "queue-with-scale-out",
      reason: { code: "no-visible-capacity", detail: "rt-a: no-slots" },
    });
    const dedicated = runtime("rt-red", 5, { isolationMode: "dedicated", tenantId: "t-red" });
    expect(decidePlacement(given({}), [dedicated], NOW, policy()).kind).toBe("queue-with-scale-out");
  });
});
