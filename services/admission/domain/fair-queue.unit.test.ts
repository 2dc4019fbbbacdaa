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

  it("gives each tenant up to its weight per round, FIFO within the tenant", () => {
    const pending = [run("a", 1), run("a", 2), run("a", 3), run("a", 4), run("b", 5), run("b", 6)];
    const order = fairOrder(pending, (t) => (t === "a" ? 2 : 1)).map((r) => r.sharedRunId);
    expect(order).toEqual(["a-1", "a-2", "b-5", "a-3", "a-4", "b-6"]);
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
