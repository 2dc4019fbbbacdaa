import { describe, expect, it } from "vitest";
import { TenantSettings } from "../../../contracts/index.ts";
import { quotaDecision } from "./quota.ts";
import { isQueueStalled, planScaleOut, SCALE_OUT_RETRY_MS } from "./single-flight.ts";

const tenant = (overQuota: "reject" | "queue") =>
  TenantSettings.parse({ tenantId: "t-q", maxConcurrentRuns: 2, overQuota });

describe("tenant quota (given/when/then; proves no transport)", () => {
  it("admits below the quota", () => {
    expect(quotaDecision(tenant("queue"), 1, { status: "submitted", recoveryPending: false })).toEqual({ kind: "ok" });
  });
  it("queues at the quota with tenant-quota-exceeded when the tenant queues", () => {
    expect(quotaDecision(tenant("queue"), 2, { status: "submitted", recoveryPending: false })).toMatchObject({
      kind: "queue",
      reason: { code: "tenant-quota-exceeded" },
    });
  });
  it("rejects a new submission at the quota when the tenant rejects, but only queues a run that was already queued", () => {
    expect(quotaDecision(tenant("reject"), 2, { status: "submitted", recoveryPending: false }).kind).toBe("reject");
    expect(quotaDecision(tenant("reject"), 2, { status: "queued", recoveryPending: false }).kind).toBe("queue");
  });
  it("never holds a recovery item back by the quota", () => {
    expect(quotaDecision(tenant("reject"), 5, { status: "requeued-for-resume", recoveryPending: true })).toEqual({
      kind: "ok",
    });
  });
});

describe("single-flight scale-out (given/when/then; proves no transport)", () => {
  it("makes generation 0 when no request with the key exists", () => {
    expect(planScaleOut([], 1000, 250, 2)).toEqual({ kind: "request", generation: 0 });
  });
  it("makes every run wait for the open request instead of asking again", () => {
    expect(planScaleOut([{ requestId: "so-a", status: "observed" }], 1000, 250, 2)).toEqual({
      kind: "wait-for",
      requestId: "so-a",
    });
  });
  it("holds for the new runtime's first heartbeats after a fulfilment, then asks for the next generation", () => {
    const known = [{ requestId: "so-a", status: "fulfilled", endedMs: 1000 }];
    expect(planScaleOut(known, 1500, 250, 2)).toEqual({ kind: "hold" });
    expect(planScaleOut(known, 2001, 250, 2)).toEqual({ kind: "request", generation: 1 });
  });
  it("does not hold for a fulfilled runtime that is already suspected or fenced (a crash right after a scale-out)", () => {
    const known = [{ requestId: "so-a", status: "fulfilled", endedMs: 1000, runtimeGone: true }];
    expect(planScaleOut(known, 1001, 250, 2)).toEqual({ kind: "request", generation: 1 });
    expect(planScaleOut([{ ...known[0]!, runtimeGone: false }], 1001, 250, 2)).toEqual({ kind: "hold" });
  });
  it("never asks for a runtime for a tenant that may not start any (maxRuntimeInstances 0), with or without history", () => {
    expect(planScaleOut([], 1000, 250, 0)).toEqual({ kind: "hold" });
    expect(
      planScaleOut([{ requestId: "so-a", status: "rejected", endedMs: 0 }], 1000 + SCALE_OUT_RETRY_MS, 250, 0),
    ).toEqual({ kind: "hold" });
    expect(planScaleOut([], 1000, 250, 1)).toEqual({ kind: "request", generation: 0 });
  });
  it("stops waiting for an open request past its own expiry (nobody will settle it): after the back-off, the next generation", () => {
    const known = [{ requestId: "so-a", status: "observed", expiresMs: 300_000 }];
    expect(planScaleOut(known, 300_000, 250, 2)).toEqual({ kind: "wait-for", requestId: "so-a" });
    expect(planScaleOut(known, 300_001, 250, 2)).toEqual({ kind: "hold" });
    expect(planScaleOut(known, 300_000 + SCALE_OUT_RETRY_MS - 1, 250, 2)).toEqual({ kind: "hold" });
    expect(planScaleOut(known, 300_000 + SCALE_OUT_RETRY_MS, 250, 2)).toEqual({ kind: "request", generation: 1 });
    // A newer open request that has not lapsed is still waited for.
    const both = [...known, { requestId: "so-b", status: "requested", expiresMs: 900_000 }];
    expect(planScaleOut(both, 400_000, 250, 2)).toEqual({ kind: "wait-for", requestId: "so-b" });
  });
  it("backs off after a rejection so a tenant at its runtime limit does not storm the provisioner", () => {
    const known = [
      { requestId: "so-a", status: "fulfilled", endedMs: 0 },
      { requestId: "so-b", status: "rejected", endedMs: 1000 },
    ];
    expect(planScaleOut(known, 1000 + SCALE_OUT_RETRY_MS - 1, 250, 2)).toEqual({ kind: "hold" });
    expect(planScaleOut(known, 1000 + SCALE_OUT_RETRY_MS, 250, 2)).toEqual({ kind: "request", generation: 2 });
  });
});

describe("queue liveness guard (given/when/then; proves no transport)", () => {
  const bound = 30_000;
  it("is not stalled while the run is not queued, or queued for less than the bound", () => {
    expect(isQueueStalled(undefined, undefined, 1_000_000, bound)).toBe(false);
    expect(isQueueStalled(1_000_000, undefined, 1_000_000 + bound, bound)).toBe(false);
  });
  it("is not stalled past the bound while a request is open and not past its own expiry", () => {
    expect(isQueueStalled(0, { expiresMs: 200_000 }, 100_000, bound)).toBe(false);
  });
  it("is stalled past the bound with no open request, or with an open one past its expiry", () => {
    expect(isQueueStalled(0, undefined, bound + 1, bound)).toBe(true);
    expect(isQueueStalled(0, { expiresMs: 50_000 }, 60_000, bound)).toBe(true);
  });
});
