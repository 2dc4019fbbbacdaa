import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { RuntimeInstanceId, TenantSettings } from "../../../contracts/index.ts";
import { rankCandidates, type Candidate } from "./ranking.ts";
import { isVisible, type IsolationFacts } from "./visibility.ts";

const tenant = (over: z.input<typeof TenantSettings>) => TenantSettings.parse(over);
const shared = tenant({ tenantId: "t-shared" });
const dedicated = tenant({ tenantId: "t-ded", isolationMode: "dedicated" });
const dedicatedFallback = tenant({ tenantId: "t-ded2", isolationMode: "dedicated", allowSharedFallback: true });
const hybridGroup = tenant({ tenantId: "t-hyb", isolationMode: "hybrid", tenantGroupId: "g-1" });
const otherInGroup = tenant({ tenantId: "t-other", isolationMode: "dedicated", tenantGroupId: "g-1" });
const hybridFallback = tenant({ tenantId: "t-hyb", isolationMode: "hybrid", allowSharedFallback: true });
const hybridNoFallback = tenant({ tenantId: "t-hyb", isolationMode: "hybrid", allowSharedFallback: false });
const otherGroup = tenant({
  tenantId: "t-g2",
  isolationMode: "hybrid",
  tenantGroupId: "g-2",
  allowSharedFallback: true,
});

const rt = (f: IsolationFacts) => f;

describe("tenant visibility of runtimes (pure rule; proves no transport)", () => {
  const table: [string, IsolationFacts, TenantSettings, boolean][] = [
    ["shared runtime is visible to a shared tenant", rt({ isolationMode: "shared" }), shared, true],
    [
      "shared runtime is invisible to a dedicated tenant without fallback",
      rt({ isolationMode: "shared" }),
      dedicated,
      false,
    ],
    [
      "shared runtime is visible to a dedicated tenant with fallback",
      rt({ isolationMode: "shared" }),
      dedicatedFallback,
      true,
    ],
    [
      "dedicated runtime is visible to its owner",
      rt({ isolationMode: "dedicated", tenantId: "t-ded" }),
      dedicated,
      true,
    ],
    [
      "dedicated runtime is invisible to another tenant",
      rt({ isolationMode: "dedicated", tenantId: "t-ded" }),
      dedicatedFallback,
      false,
    ],
    [
      "dedicated runtime is invisible to a shared tenant",
      rt({ isolationMode: "dedicated", tenantId: "t-ded" }),
      shared,
      false,
    ],
    [
      "group-owned runtime is visible to a group member",
      rt({ isolationMode: "hybrid", tenantGroupId: "g-1" }),
      otherInGroup,
      true,
    ],
    [
      "group-owned runtime is invisible to a tenant without a group",
      rt({ isolationMode: "hybrid", tenantGroupId: "g-1" }),
      dedicated,
      false,
    ],
    [
      "runtime owned by a group member's tenant id is visible only by group match",
      rt({ isolationMode: "dedicated", tenantId: "t-hyb", tenantGroupId: "g-1" }),
      otherInGroup,
      true,
    ],
    [
      "shared runtime is visible to a hybrid tenant with fallback",
      rt({ isolationMode: "shared" }),
      hybridFallback,
      true,
    ],
    [
      "shared runtime is invisible to a hybrid tenant without fallback",
      rt({ isolationMode: "shared" }),
      hybridNoFallback,
      false,
    ],
    [
      "hybrid runtime is visible to its owner",
      rt({ isolationMode: "hybrid", tenantId: "t-hyb" }),
      hybridNoFallback,
      true,
    ],
    [
      "hybrid runtime is invisible to a shared tenant",
      rt({ isolationMode: "hybrid", tenantId: "t-hyb" }),
      shared,
      false,
    ],
    [
      "hybrid runtime is invisible to another tenant, fallback or not",
      rt({ isolationMode: "hybrid", tenantId: "t-hyb" }),
      dedicatedFallback,
      false,
    ],
    [
      "dedicated runtime is invisible to a hybrid tenant with fallback",
      rt({ isolationMode: "dedicated", tenantId: "t-ded" }),
      hybridFallback,
      false,
    ],
    [
      "dedicated runtime is visible to its owner even when the owner is hybrid",
      rt({ isolationMode: "dedicated", tenantId: "t-hyb" }),
      hybridNoFallback,
      true,
    ],
    [
      "group-owned runtime is invisible to another group",
      rt({ isolationMode: "dedicated", tenantGroupId: "g-1" }),
      otherGroup,
      false,
    ],
    [
      "group-owned hybrid runtime is visible to a hybrid member of the group",
      rt({ isolationMode: "hybrid", tenantGroupId: "g-1" }),
      hybridGroup,
      true,
    ],
    ["unowned hybrid runtime is visible to nobody", rt({ isolationMode: "hybrid" }), hybridGroup, false],
    ["unowned dedicated runtime is visible to nobody", rt({ isolationMode: "dedicated" }), shared, false],
  ];
  it.each(table)("%s", (_title, runtime, t, expected) => {
    expect(isVisible(runtime, t)).toBe(expected);
  });

  it("never matches on an empty tenant group", () => {
    const noGroup = tenant({ tenantId: "t-x", isolationMode: "dedicated" });
    expect(isVisible({ isolationMode: "dedicated", tenantId: "t-y" }, noGroup)).toBe(false);
  });
});

const cand = (id: string, over: Partial<Candidate> = {}): Candidate => ({
  runtimeInstanceId: RuntimeInstanceId.parse(id),
  isolationMode: "shared",
  canAcceptRun: true,
  reasons: [],
  effectiveAvailableSlots: 1,
  availableWorkers: 1,
  runningRuns: 0,
  queuedRuns: 0,
  lastHeartbeatAt: 1000,
  status: "ready",
  ...over,
});

describe("candidate ranking (pure rule; proves no transport)", () => {
  it("orders by slots, workers, running, queued, heartbeat, then id, and is total", () => {
    const cs = [
      cand("rt-f"),
      cand("rt-e", { lastHeartbeatAt: 2000 }),
      cand("rt-d", { queuedRuns: 0, runningRuns: 0, availableWorkers: 2 }),
      cand("rt-c", { effectiveAvailableSlots: 3 }),
      cand("rt-b", { runningRuns: 2 }),
      cand("rt-a"),
    ];
    expect(rankCandidates(cs, shared).map((r) => r.candidate.runtimeInstanceId)).toEqual([
      "rt-c",
      "rt-d",
      "rt-e",
      "rt-a",
      "rt-f",
      "rt-b",
    ]);
    expect(rankCandidates([...cs].reverse(), shared).map((r) => r.candidate.runtimeInstanceId)).toEqual([
      "rt-c",
      "rt-d",
      "rt-e",
      "rt-a",
      "rt-f",
      "rt-b",
    ]);
  });

  it("drops runtimes that cannot accept, are suspected or fenced, or are invisible to the run's tenant", () => {
    const cs = [
      cand("rt-1", { canAcceptRun: false }),
      cand("rt-2", { status: "suspected" }),
      cand("rt-3", { isolationMode: "dedicated", tenantId: "t-ded" }),
      cand("rt-4"),
    ];
    expect(rankCandidates(cs, shared).map((r) => r.candidate.runtimeInstanceId)).toEqual(["rt-4"]);
  });

  it("puts owned capacity first when the tenant prefers dedicated capacity", () => {
    const t = tenant({
      tenantId: "t-ded2",
      isolationMode: "hybrid",
      allowSharedFallback: true,
      preferDedicatedCapacity: true,
    });
    const cs = [
      cand("rt-shared", { effectiveAvailableSlots: 9 }),
      cand("rt-own", { isolationMode: "hybrid", tenantId: "t-ded2" }),
    ];
    expect(rankCandidates(cs, t).map((r) => r.candidate.runtimeInstanceId)).toEqual(["rt-own", "rt-shared"]);
  });
});
