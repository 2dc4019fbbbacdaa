import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FairPull, type PullPolicy } from "./fair-pull.ts";
import { FairShare, fairOrder, type PendingRun } from "./fair-queue.ts";
import { TenantQueues } from "./tenant-queues.ts";

interface Bucket {
  readonly name: string;
}

const queuesOf = (runs: readonly PendingRun[], bucketOf: (r: PendingRun) => string = () => "new") => {
  const q = new TenantQueues<PendingRun, Bucket>();
  for (const r of runs)
    q.place(r, {
      tenantId: r.tenantId,
      bucket: bucketOf(r),
      info: { name: bucketOf(r) },
      priority: r.priority ?? 0,
      seq: r.sinceSeq,
      id: r.sharedRunId,
    });
  return q;
};

const policy = (over: Partial<PullPolicy<PendingRun, Bucket>> = {}): PullPolicy<PendingRun, Bucket> => ({
  weightOf: () => 1,
  startOf: () => 0,
  priorityCap: () => 1_000,
  skipsBucket: () => false,
  excluded: () => false,
  ...over,
});

const drain = <T, B>(p: FairPull<T, B>): T[] => {
  const out: T[] = [];
  for (let r = p.next(); r; r = p.next()) out.push(r);
  return out;
};

const flood = (tenantId: string, n: number, from = 0): PendingRun[] =>
  Array.from({ length: n }, (_, i) => ({
    tenantId,
    sharedRunId: `${tenantId}-${from + i}`,
    recovery: false,
    sinceSeq: from + i,
  }));

describe("lazy fair pull over per-tenant queues (pure; proves no transport)", () => {
  it("pulls exactly fairOrder's order for any backlog, weights, start tags and priorities", () => {
    const run = fc.record({
      tenantId: fc.constantFrom("a", "b", "c", "d"),
      sinceSeq: fc.integer({ min: 1, max: 60 }),
      priority: fc.integer({ min: 0, max: 3 }),
    });
    fc.assert(
      fc.property(
        fc.array(run, { maxLength: 80 }),
        fc.dictionary(fc.constantFrom("a", "b", "c", "d"), fc.integer({ min: 0, max: 5 })),
        fc.dictionary(fc.constantFrom("a", "b", "c", "d"), fc.integer({ min: 0, max: 8 })),
        (raw, weights, charges) => {
          const runs = raw.map((r, i) => ({ ...r, sharedRunId: `r-${i}`, recovery: false }));
          const share = new FairShare();
          for (const [t, n] of Object.entries(charges)) for (let i = 0; i < n; i++) share.charge(t, weights[t] ?? 1);
          const weightOf = (t: string) => weights[t] ?? 1;
          const startOf = (t: string) => share.startOf(t);
          const expected = fairOrder(runs, weightOf, startOf).map((r) => r.sharedRunId);
          const pulled = drain(new FairPull(queuesOf(runs), policy({ weightOf, startOf }))).map((r) => r.sharedRunId);
          expect(pulled).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("skips a blocked tenant's bucket whole: pulling past 10 000 of its queued runs looks at none of them", () => {
    const runs = [...flood("a", 10_000), ...flood("b", 3, 20_000)];
    let looked = 0;
    const pull = new FairPull(
      queuesOf(runs, (r) => (r.tenantId === "a" ? "queued:no-visible-capacity" : "new")),
      policy({
        skipsBucket: (t, b) => t === "a" && b.name.startsWith("queued"),
        excluded: () => (looked++, false),
      }),
    );
    expect(drain(pull).map((r) => r.sharedRunId)).toEqual(["b-20000", "b-20001", "b-20002"]);
    expect(looked).toBe(3);
  });

  it("pulls k runs of a 10 000-run backlog looking at k of them, and stops the tenant once its bucket is blocked", () => {
    let blocked = false;
    let looked = 0;
    const pull = new FairPull(
      queuesOf(flood("a", 10_000)),
      policy({ skipsBucket: () => blocked, excluded: () => (looked++, false) }),
    );
    const first = [pull.next(), pull.next(), pull.next()].map((r) => r!.sharedRunId);
    blocked = true; // the third found no place: the tenant is blocked for the rest of the pass
    expect(first).toEqual(["a-0", "a-1", "a-2"]);
    expect(pull.next()).toBeUndefined();
    expect(looked).toBe(3);
  });

  it("never pulls a run twice in a pass, even when it moves behind the cursor, and skips runs being sent", () => {
    const runs = flood("a", 4);
    const q = queuesOf(runs);
    const pull = new FairPull(q, policy({ excluded: (r) => r.sharedRunId === "a-1" }));
    const first = pull.next()!;
    // a-0 moved behind the others while the pass ran (a sequence within the pass's range), already pulled.
    q.place(first, { tenantId: "a", bucket: "new", info: { name: "new" }, priority: 0, seq: 3, id: first.sharedRunId });
    expect([first, ...drain(pull)].map((r) => r.sharedRunId)).toEqual(["a-0", "a-2", "a-3"]);
  });

  it("takes only runs that waited when the pass began: arrivals during it wait for the next pass", () => {
    const q = queuesOf(flood("a", 3));
    const pull = new FairPull(q, policy());
    expect(pull.next()!.sharedRunId).toBe("a-0");
    for (const r of [...flood("a", 100, 10), ...flood("b", 1, 200)])
      q.place(r, {
        tenantId: r.tenantId,
        bucket: "new",
        info: { name: "new" },
        priority: 9,
        seq: r.sinceSeq,
        id: r.sharedRunId,
      });
    expect(drain(pull).map((r) => r.sharedRunId)).toEqual(["a-1", "a-2"]);
    const nextPass = drain(new FairPull(q, policy()));
    expect(nextPass[0]!.sharedRunId).toBe("a-10");
    expect(nextPass.findIndex((r) => r.tenantId === "b")).toBe(1);
  });

  it("looks at each run once when every pulled run moves to another bucket of its tenant (queued in the pass)", () => {
    const runs = flood("a", 10_000);
    const q = queuesOf(runs);
    let looked = 0;
    const pull = new FairPull(q, policy({ excluded: () => (looked++, false) }));
    let pulled = 0;
    for (let r = pull.next(); r; r = pull.next(), pulled++) {
      const seq = 20_000 + r.sinceSeq;
      q.place(r, { tenantId: "a", bucket: "queued", info: { name: "queued" }, priority: 0, seq, id: r.sharedRunId });
    }
    expect(pulled).toBe(10_000);
    expect(looked).toBeLessThanOrEqual(2 * 10_000);
  });

  it("counts a priority above the tenant's cap as the cap: FIFO among them, ahead of lower ones", () => {
    const runs: PendingRun[] = [
      { tenantId: "a", sharedRunId: "low", recovery: false, sinceSeq: 1, priority: 1 },
      { tenantId: "a", sharedRunId: "high-late", recovery: false, sinceSeq: 3, priority: 9 },
      { tenantId: "a", sharedRunId: "capped-early", recovery: false, sinceSeq: 2, priority: 5 },
    ];
    const pulled = drain(new FairPull(queuesOf(runs), policy({ priorityCap: () => 5 })));
    expect(pulled.map((r) => r.sharedRunId)).toEqual(["capped-early", "high-late", "low"]);
  });

  it("keeps each bucket ordered by sequence whatever the insertion order, and takes runs out", () => {
    const runs = flood("a", 50);
    const shuffled = [...runs].sort((x, y) => ((x.sinceSeq * 7919) % 50) - ((y.sinceSeq * 7919) % 50));
    const q = queuesOf(shuffled);
    for (const r of runs.filter((x) => x.sinceSeq % 2 === 0)) q.place(r, undefined);
    expect(q.size).toBe(25);
    expect(drain(new FairPull(q, policy())).map((r) => r.sinceSeq)).toEqual(
      runs.filter((x) => x.sinceSeq % 2 === 1).map((x) => x.sinceSeq),
    );
    for (const r of runs) q.place(r, undefined);
    expect(q.tenantIds()).toEqual([]);
  });
});
