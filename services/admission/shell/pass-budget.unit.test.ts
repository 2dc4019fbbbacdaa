import { FairShare } from "../domain/fair-queue.ts";
import { describe, expect, it } from "vitest";
import { initialRunState } from "../../../aggregates/run.ts";
import { ScaleOutRequestId } from "../../../contracts/index.ts";
import { FairPull } from "../domain/fair-pull.ts";
import type { Placeable } from "./candidates.ts";
import { CARRY_MS, PassBudget } from "./pass-budget.ts";
import { PendingWork } from "./pending-work.ts";
import type { IndexedRun, RunIndex } from "./run-index.ts";

/** A run of `tenantId` queued globally for `reason`, pending since stream sequence `seq`. */
const queued = (tenantId: string, seq: number, reason: string, requestId?: string): IndexedRun => ({
  tenantId,
  sharedRunId: `run-${tenantId}-${String(seq).padStart(5, "0")}`,
  state: {
    ...initialRunState(),
    status: "queued",
    lastReason: reason,
    scaleOutRequestIds: requestId ? [ScaleOutRequestId.parse(requestId)] : [],
    lastSeq: seq,
  } as IndexedRun["state"],
  sinceSeq: seq,
  sinceMs: 0,
  queuedSinceMs: 0,
});

const noIndex = { heldOn: () => 0 } as unknown as RunIndex;

/**
 * One pass over the queues as admission pulls them, where every run looked at is queued again as
 * it is (its tenant is blocked: every runtime full to it). Returns the runs looked at.
 */
function pass(runs: readonly IndexedRun[], budget = new PassBudget([], noIndex, 2)): IndexedRun[] {
  const work = new PendingWork();
  for (const r of runs) work.update(r, true);
  const pull = new FairPull(work.queues, {
    weightOf: () => 1,
    startOf: () => 0,
    priorityCap: () => 100,
    skipsBucket: (t, b) => budget.skipsBucket(t, b),
    excluded: () => false,
  });
  const looked: IndexedRun[] = [];
  for (let r = pull.next(); r; r = pull.next()) {
    if (budget.skips(r)) continue;
    looked.push(r);
    budget.block(r, r.state.lastReason!, r.state.scaleOutRequestIds.at(-1));
  }
  return looked;
}

describe("an admission pass over a blocked tenant's backlog (in memory, pure: proves no transport)", () => {
  it("looks at one run per reason when a flood's runs are queued for two (queued recently, stalled), not at all of them", () => {
    // Interleaved by age the way a pass meets them: stalled runs are the older ones, but the two
    // buckets' heads alternate in the fair order whenever one bucket is not skipped.
    const runs = Array.from({ length: 2_000 }, (_, i) =>
      queued("t-flood", i + 1, i % 2 === 0 ? "queue-stalled" : "no-visible-capacity"),
    );
    const looked = pass(runs);
    expect(looked.map((r) => r.state.lastReason).sort()).toEqual(["no-visible-capacity", "queue-stalled"]);
  });

  it("still looks at runs queued for a reason not found blocked in the pass, and at another tenant's", () => {
    const runs = [
      ...Array.from({ length: 50 }, (_, i) => queued("t-flood", i + 1, "no-visible-capacity")),
      queued("t-flood", 100, "no-visible-capacity", "so-1"),
      queued("t-flood", 101, "no-visible-capacity", "so-2"),
      queued("t-quiet", 102, "no-visible-capacity"),
    ];
    const looked = pass(runs);
    // A run waiting on a request is skipped only when its tenant was found blocked on that request.
    const budget = new PassBudget([], noIndex, 2);
    budget.block(runs[0]!, "no-visible-capacity", "so-1");
    expect(budget.skips(runs[50]!)).toBe(true);
    expect(budget.skips(runs[51]!)).toBe(false);
    expect(budget.skips(runs[52]!)).toBe(false); // another tenant
    expect(budget.skips(queued("t-flood", 200, "queue-stalled"))).toBe(false); // a reason not found
    expect(looked.map((r) => r.tenantId)).toContain("t-quiet");
    expect(looked.filter((r) => r.tenantId === "t-flood").length).toBeLessThanOrEqual(3);
  });
});

/** One shared runtime with `free` places left (the flood holds 10 of them). */
const shared = (free: number): Placeable =>
  ({
    runtimeInstanceId: "rt-shared",
    isolationMode: "shared",
    canAcceptRun: free > 0,
    reasons: free > 0 ? [] : ["no-available-slots"],
    effectiveAvailableSlots: free,
    availableWorkers: 4,
    runningRuns: 4,
    queuedRuns: 6,
    lastHeartbeatAt: 0,
    status: "ready",
    transport: "http",
    heartbeatSlots: free,
    beatTakenAt: -1,
  }) as unknown as Placeable;

describe("blocks carried from one admission pass to the next (in memory, pure: proves no transport)", () => {
  const holds = { heldOn: (_rt: string, t: string) => (t === "t-flood" ? 10 : 0) } as unknown as RunIndex;
  const stalled = Array.from({ length: 500 }, (_, i) => queued("t-flood", i + 1, "queue-stalled"));

  it("a tenant found blocked is not looked at by the next pass while no runtime may take its runs, for at most CARRY_MS", () => {
    const first = new PassBudget([shared(2)], holds, 2); // the last 2 places are the headroom: not the flood's
    expect(pass(stalled, first)).toHaveLength(1);
    const carried = first.carried(1_000);
    const next = new PassBudget([shared(2)], holds, 2);
    next.adopt(carried, 1_000 + CARRY_MS - 1);
    expect(pass(stalled, next)).toHaveLength(0);
    // Carried on, the block keeps the time it was first found: it expires, and that pass looks again.
    const later = new PassBudget([shared(1)], holds, 2);
    later.adopt(next.carried(1_000 + CARRY_MS - 1), 1_000 + CARRY_MS);
    expect(pass(stalled, later)).toHaveLength(1);
  });

  it("a place the tenant may take (freed, or a new runtime) drops the carried block; new submissions are always looked at", () => {
    const first = new PassBudget([shared(0)], holds, 2);
    pass(stalled, first);
    const roomy = new PassBudget([shared(3)], holds, 2); // 3 free: one is the flood's to take
    roomy.adopt(first.carried(0), 10);
    expect(pass(stalled, roomy)).toHaveLength(1);
    const full = new PassBudget([shared(0)], holds, 2);
    full.adopt(first.carried(0), 10);
    const fresh = {
      ...queued("t-flood", 900, "x"),
      state: { ...queued("t-flood", 900, "x").state, status: "submitted" },
    };
    expect(pass([...stalled, fresh as IndexedRun], full)).toEqual([fresh]);
  });
});

describe("the headroom in a pass's view (in memory, pure: proves no transport)", () => {
  it("a tenant with runs there already still takes a kept place while it has no backlog; a flood with one does not", () => {
    // The flood holds 10 of 12 places; the quiet tenant's 2 earlier runs linger (a busy machine).
    const index = {
      heldOn: (_rt: string, t: string) => (t === "t-flood" ? 10 : t === "t-quiet" ? 2 : 0),
    } as unknown as RunIndex;
    const waiting = new Map([
      ["t-flood", 5_000],
      ["t-quiet", 1],
    ]);
    const budget = new PassBudget([shared(2)], index, 2, (t) => waiting.get(t) ?? 0);
    expect(budget.viewFor("t-quiet")[0]!.canAcceptRun).toBe(true);
    expect(budget.viewFor("t-flood")[0]!.canAcceptRun).toBe(false);
    expect(budget.claim(shared(2), "t-quiet")).toBe(true);
    expect(budget.claim(shared(2), "t-quiet")).toBe(true);
    expect(budget.claim(shared(2), "t-quiet")).toBe(false); // no place left
    // With a backlog of its own (a burst), the quiet tenant holding 2 is kept out as before.
    waiting.set("t-quiet", 3);
    expect(new PassBudget([shared(2)], index, 2, (t) => waiting.get(t) ?? 0).viewFor("t-quiet")[0]!.canAcceptRun).toBe(
      false,
    );
  });

  it("a tenant ahead of its fair share (not due against a tenant refused a kept place in this pass) is kept out of the kept places, however few it holds; the reason says so", () => {
    // Two tenants with backlogs; t-light's runs left the runtime first, so it holds none there.
    const index = { heldOn: (_rt: string, t: string) => (t === "t-heavy" ? 18 : 0) } as unknown as RunIndex;
    const fair = new FairShare();
    fair.charge("t-light", 1); // t-light: next at 1; t-heavy (never placed): next at 0
    const budget = new PassBudget([shared(2)], index, 2, () => 100, fair);
    expect(budget.viewFor("t-light")[0]!.canAcceptRun).toBe(true); // no rival refused yet
    expect(budget.viewFor("t-heavy")[0]!.canAcceptRun).toBe(false); // holds 18: refused a kept place
    const view = budget.viewFor("t-light")[0]!;
    expect(view.canAcceptRun).toBe(false);
    expect(view.reasons.at(-1)).toContain("ahead of its share");
    expect(budget.claim(shared(2), "t-light")).toBe(false);
    for (let i = 0; i < 3; i++) fair.charge("t-heavy", 3); // t-heavy: next at 1: t-light's turn
    expect(budget.claim(shared(2), "t-light")).toBe(true);
    // A third place is the fair order's alone: taken whether due or not.
    const ahead = new FairShare();
    ahead.charge("t-light", 1);
    const third = new PassBudget([shared(3)], index, 2, () => 100, ahead);
    third.viewFor("t-heavy");
    expect(third.claim(shared(3), "t-light")).toBe(true);
  });

  it("a lone tenant is never ahead of its share: it takes the kept places while it holds fewer than the headroom", () => {
    const index = { heldOn: () => 1 } as unknown as RunIndex;
    const fair = new FairShare();
    for (let i = 0; i < 5; i++) fair.charge("t-alone", 1);
    expect(new PassBudget([shared(2)], index, 2, () => 100, fair).claim(shared(2), "t-alone")).toBe(true);
  });
});
