import { describe, expect, it } from "vitest";
import { fairOrder, type PendingRun } from "./fair-queue.ts";

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

  it("interleaves tenants by places per unit of weight, FIFO within the tenant", () => {
    const pending = [run("a", 1), run("a", 2), run("a", 3), run("a", 4), run("b", 5), run("b", 6)];
    const order = fairOrder(pending, (t) => (t === "a" ? 2 : 1)).map((r) => r.sharedRunId);
    // a: 0/2 (tie, id first), b: 0/1, a: 1/2, a: 2/2 vs b 1/1 (tie, id first), b: 1/1, a: 3/2.
    expect(order).toEqual(["a-1", "b-5", "a-2", "a-3", "b-6", "a-4"]);
  });

  it("gives the next place to the tenant holding the fewest places per unit of weight, whatever it holds already", () => {
    const pending = [run("a", 1), run("a", 2), run("b", 3), run("b", 4)];
    // a (weight 3) holds 9, b (weight 1) holds 2: b is under its share (2/1 < 9/3) and goes first.
    expect(
      fairOrder(
        pending,
        (t) => (t === "a" ? 3 : 1),
        (t) => (t === "a" ? 9 : 2),
      )[0]!.tenantId,
    ).toBe("b");
    // b holds 4: a is under its share (9/3 < 4/1).
    expect(
      fairOrder(
        pending,
        (t) => (t === "a" ? 3 : 1),
        (t) => (t === "a" ? 9 : 4),
      )[0]!.tenantId,
    ).toBe("a");
  });

  it("over many lone places, tenants flooding together get them in proportion to their weights", () => {
    // One place frees at a time (a pass places one run); held counts follow the places given.
    const held = new Map([
      ["a", 0],
      ["b", 0],
    ]);
    const pending = [
      ...Array.from({ length: 5 }, (_, i) => run("a", i)),
      ...Array.from({ length: 5 }, (_, i) => run("b", 10 + i)),
    ];
    for (let i = 0; i < 400; i++) {
      const t = fairOrder(
        pending,
        (x) => (x === "a" ? 3 : 1),
        (x) => held.get(x)!,
      )[0]!.tenantId;
      held.set(t, held.get(t)! + 1);
    }
    expect(held.get("a")).toBe(300);
    expect(held.get("b")).toBe(100);
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
