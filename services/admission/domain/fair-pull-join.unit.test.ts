import { describe, expect, it } from "vitest";
import { FairPull, type PullPolicy } from "./fair-pull.ts";
import type { PendingRun } from "./fair-queue.ts";
import { TenantQueues } from "./tenant-queues.ts";

type Q = TenantQueues<PendingRun, null>;

const add = (q: Q, tenantId: string, n: number, from: number): void => {
  for (let i = 0; i < n; i++) {
    const r: PendingRun = { tenantId, sharedRunId: `${tenantId}-${from + i}`, recovery: false, sinceSeq: from + i };
    q.place(r, { tenantId, bucket: "new", info: null, priority: 0, seq: r.sinceSeq, id: r.sharedRunId });
  }
};

const policy = (start: Record<string, number> = {}): PullPolicy<PendingRun, null> => ({
  weightOf: () => 1,
  startOf: (t) => start[t] ?? 0,
  priorityCap: () => 0,
  skipsBucket: () => false,
  excluded: () => false,
});

const ids = (p: FairPull<PendingRun, null>, n: number): string[] =>
  Array.from({ length: n }, () => p.next()?.sharedRunId ?? "-");

describe("a tenant under its fair share joins a running pass when its run arrives (pure; proves no transport)", () => {
  it("a quiet tenant's run arriving mid-pass is pulled next, ahead of the rest of the flood's batch", () => {
    const q: Q = new TenantQueues();
    add(q, "flood", 1_000, 1);
    const pull = new FairPull(q, policy({ flood: 5, quiet: 4 }));
    expect(ids(pull, 3)).toEqual(["flood-1", "flood-2", "flood-3"]);
    add(q, "quiet", 1, 2_000);
    expect(pull.join("quiet")).toBe(true);
    expect(ids(pull, 3)).toEqual(["quiet-2000", "flood-4", "flood-5"]);
  });

  it("the flooding tenant never joins: its arrivals during the pass wait for the next one", () => {
    const q: Q = new TenantQueues();
    add(q, "flood", 2, 1);
    const pull = new FairPull(q, policy());
    expect(pull.next()!.sharedRunId).toBe("flood-1");
    add(q, "flood", 100, 10);
    expect(pull.join("flood")).toBe(false); // in the heap
    expect(ids(pull, 2)).toEqual(["flood-2", "-"]);
    expect(pull.join("flood")).toBe(false); // the pull is empty and it took part: the next pass orders it
  });

  it("a quiet tenant joins a pass with nothing left to pull (its placements still in flight), ahead of the tenants that left it", () => {
    const q: Q = new TenantQueues();
    add(q, "flood", 2, 1);
    const pull = new FairPull(q, policy({ flood: 5, quiet: 4 }));
    expect(ids(pull, 3)).toEqual(["flood-1", "flood-2", "-"]);
    add(q, "flood", 50, 10);
    add(q, "quiet", 1, 100);
    expect(pull.join("quiet")).toBe(true);
    expect(ids(pull, 2)).toEqual(["quiet-100", "-"]); // the flood's arrivals wait for the next pass
    add(q, "quiet", 1, 200);
    expect(pull.join("quiet")).toBe(false); // once per pass once the pull ran dry: arrivals cannot feed it
  });

  it("a tenant not ahead of every tenant that left the pass does not join it once it ran dry", () => {
    const q: Q = new TenantQueues();
    add(q, "a", 1, 1);
    const pull = new FairPull(q, policy({ a: 2, b: 3 }));
    expect(ids(pull, 2)).toEqual(["a-1", "-"]); // a left at tag 3: b's 3 is not ahead (ties: by id)
    add(q, "b", 1, 100);
    expect(pull.join("b")).toBe(false);
  });

  it("a tenant whose tag is not ahead of every tenant in the pass does not join (it is over its share)", () => {
    const q: Q = new TenantQueues();
    add(q, "a", 10, 1);
    const pull = new FairPull(q, policy({ a: 2, b: 3 }));
    expect(pull.next()!.sharedRunId).toBe("a-1"); // a's tag is now 3: b's is not ahead of it (ties: by id, a first)
    add(q, "b", 1, 100);
    expect(pull.join("b")).toBe(false);
    expect(ids(pull, 10).filter((x) => x.startsWith("b"))).toEqual([]);
  });

  it("joins with what it holds at the join: its later arrivals wait (one join cannot feed the pass)", () => {
    const q: Q = new TenantQueues();
    add(q, "flood", 10, 1);
    const pull = new FairPull(q, policy({ flood: 10, quiet: 0 }));
    pull.next();
    add(q, "quiet", 2, 100);
    expect(pull.join("quiet")).toBe(true);
    add(q, "quiet", 1, 200);
    expect(pull.join("quiet")).toBe(false); // already in the pass
    expect(ids(pull, 3)).toEqual(["quiet-100", "quiet-101", "flood-2"]);
    expect(ids(pull, 20)).not.toContain("quiet-200");
  });

  it("a tenant joining again resumes from its tag in the pass: repeated arrivals get no more than its share", () => {
    const q: Q = new TenantQueues();
    add(q, "flood", 100, 1);
    const pull = new FairPull(q, policy({ flood: 0, quiet: 0 }));
    const order: string[] = [];
    for (let i = 0; i < 6; i++) {
      add(q, "quiet", 1, 1_000 + i);
      pull.join("quiet");
      order.push(...ids(pull, 2));
    }
    // quiet's tag advances 1 per run pulled, like the flood's (both weight 1, equal at the start): at
    // no point has it been pulled more than once beyond the flood, however often it joined
    let lead = 0;
    for (const x of order) {
      lead += x.startsWith("quiet") ? 1 : -1;
      expect(lead).toBeLessThanOrEqual(1);
    }
    expect(order.filter((x) => x.startsWith("quiet")).length).toBeGreaterThanOrEqual(4);
  });
});
