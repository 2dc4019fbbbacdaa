import { describe, expect, it } from "vitest";
import { FairShare, fairOrder, type PendingRun } from "./fair-queue.ts";

const run = (tenantId: string, n: number, recovery = false): PendingRun => ({
  tenantId,
  sharedRunId: `${tenantId}-${n}`,
  recovery,
  sinceSeq: n,
});

describe("fair admission order (pure; proves no transport)", () => {
  it("serves a small tenant within the first round even behind another tenant's burst", () => {
    const burst = Array.from({ length: 50 }, (_, i) => run("big", i + 1));
    const order = fairOrder([...burst, run("small", 100)], () => 1);
    expect(order.findIndex((r) => r.tenantId === "small")).toBeLessThanOrEqual(1);
  });

  it("interleaves tenants by virtual time (1 / weight per run), FIFO within the tenant", () => {
    const pending = [run("a", 1), run("a", 2), run("a", 3), run("a", 4), run("b", 5), run("b", 6)];
    const order = fairOrder(pending, (t) => (t === "a" ? 2 : 1)).map((r) => r.sharedRunId);
    // a: 0 (tie, id first), b: 0, a: 0.5, a: 1 vs b 1 (tie, id first), b: 1, a: 1.5.
    expect(order).toEqual(["a-1", "b-5", "a-2", "a-3", "b-6", "a-4"]);
  });

  it("gives the next place to the tenant with the smallest start tag, whatever it was charged before", () => {
    const pending = [run("a", 1), run("a", 2), run("b", 3), run("b", 4)];
    const share = new FairShare();
    const first = (s: FairShare) =>
      fairOrder(
        pending,
        (t) => (t === "a" ? 3 : 1),
        (t) => s.startOf(t),
      )[0]!.tenantId;
    for (let i = 0; i < 3; i++) share.charge("a", 3); // a: 0, 1/3, 2/3 -> next at 1
    share.charge("b", 1); // b starts at the virtual time 2/3 -> next at 5/3
    expect(first(share)).toBe("a");
    for (let i = 0; i < 3; i++) share.charge("a", 3); // a: next at 2
    expect(first(share)).toBe("b");
  });

  it("over many lone places, tenants flooding together get them in proportion to their weights", () => {
    // One place frees at a time (a pass places one run), and each placement is charged.
    const share = new FairShare();
    const placed = new Map([
      ["a", 0],
      ["b", 0],
    ]);
    const pending = [
      ...Array.from({ length: 5 }, (_, i) => run("a", i)),
      ...Array.from({ length: 5 }, (_, i) => run("b", 10 + i)),
    ];
    const weight = (x: string) => (x === "a" ? 3 : 1);
    for (let i = 0; i < 400; i++) {
      const t = fairOrder(pending, weight, (x) => share.startOf(x))[0]!.tenantId;
      share.charge(t, weight(t));
      placed.set(t, placed.get(t)! + 1);
    }
    expect(placed.get("a")).toBe(300);
    expect(placed.get("b")).toBe(100);
  });

  it("a tenant back from idle gets at most one unit of virtual time (weight runs) of credit, not the places it did not use", () => {
    const share = new FairShare();
    for (let i = 0; i < 100; i++) share.charge("a", 1); // b idle meanwhile
    const pending = [
      ...Array.from({ length: 6 }, (_, i) => run("a", i)),
      ...Array.from({ length: 6 }, (_, i) => run("b", 10 + i)),
    ];
    const order = fairOrder(
      pending,
      () => 1,
      (t) => share.startOf(t),
    ).map((r) => r.tenantId);
    // b starts 1 behind a: one extra place, then alternation (ties: id first).
    expect(order.slice(0, 7)).toEqual(["b", "a", "b", "a", "b", "a", "b"]);
  });

  it("a tenant blocked for a moment gets its places back in the next passes", () => {
    const share = new FairShare();
    // a and b (weight 1 each) flood; a is blocked while b takes two places in a row.
    share.charge("a", 1);
    share.charge("b", 1);
    share.charge("b", 1);
    share.charge("b", 1);
    const pending = [run("a", 1), run("a", 2), run("b", 3), run("b", 4)];
    const order = fairOrder(
      pending,
      () => 1,
      (t) => share.startOf(t),
    ).map((r) => r.tenantId);
    expect(order.slice(0, 2)).toEqual(["a", "a"]);
  });

  it("a tenant is due unless a refused rival's next placement starts before its own; with no rival it always is", () => {
    const share = new FairShare();
    expect(share.dueAgainst("a", [])).toBe(true); // never placed
    share.charge("a", 1); // a: 0 -> next at 1
    expect(share.dueAgainst("a", [])).toBe(true); // alone: never ahead of anyone
    expect(share.dueAgainst("a", ["a"])).toBe(true); // not its own rival
    expect(share.dueAgainst("a", ["b"])).toBe(false); // b (never placed) starts at 0
    expect(share.dueAgainst("b", ["a"])).toBe(true);
    for (let i = 0; i < 3; i++) share.charge("b", 3); // b: 0, 1/3, 2/3 -> next at 1
    expect(share.dueAgainst("a", ["b"])).toBe(true); // both next at 1: a's turn too
    share.charge("b", 3); // b: next at 4/3
    expect(share.dueAgainst("a", ["b"])).toBe(true);
    expect(share.dueAgainst("b", ["a"])).toBe(false);
  });

  it("puts every recovery item ahead of new work, oldest first", () => {
    const order = fairOrder([run("a", 1), run("b", 9, true), run("c", 2), run("a", 5, true)], () => 1).map(
      (r) => r.sharedRunId,
    );
    expect(order.slice(0, 2)).toEqual(["a-5", "b-9"]);
    expect(order).toHaveLength(4);
  });

  it("returns every pending run exactly once whatever the weights", () => {
    const pending = Array.from({ length: 37 }, (_, i) => run(["a", "b", "c"][i % 3]!, i, i % 7 === 0));
    const order = fairOrder(pending, (t) => (t === "b" ? 5 : 0));
    expect(new Set(order.map((r) => r.sharedRunId)).size).toBe(37);
  });
});
