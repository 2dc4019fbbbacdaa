import { describe, expect, it } from "vitest";
import { Semaphore } from "./semaphore.ts";

describe("host start-up bound (maxConcurrentHostStartups)", () => {
  it("never lets more than the limit run at once, serves waiters in order, and frees a slot when a holder fails", async () => {
    const s = new Semaphore(2);
    let active = 0;
    let peak = 0;
    const order: number[] = [];
    const gates = Array.from({ length: 5 }, () => {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      return { promise, resolve };
    });
    const runs = gates.map((g, i) =>
      s.run(async () => {
        active++;
        peak = Math.max(peak, active);
        order.push(i);
        await g.promise;
        active--;
        if (i === 0) throw new Error("start failed");
      }),
    );
    for (const g of gates) {
      g.resolve();
      await Promise.resolve();
    }
    const results = await Promise.allSettled(runs);
    expect(peak).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "fulfilled", "fulfilled", "fulfilled", "fulfilled"]);
  });

  it("refuses a limit below one", () => {
    expect(() => new Semaphore(0)).toThrow(RangeError);
  });
});
