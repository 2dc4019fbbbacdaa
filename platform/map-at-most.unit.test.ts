import { describe, expect, it } from "vitest";
import { mapAtMost } from "./map-at-most.ts";

describe("mapAtMost (in memory; proves no transport)", () => {
  it("runs at most n at once, starts the next as one ends, and answers in the items' order", async () => {
    let running = 0;
    let most = 0;
    const out = await mapAtMost([30, 5, 20, 1, 10], 2, async (ms) => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, ms));
      running--;
      return ms * 2;
    });
    expect(out).toEqual([60, 10, 40, 2, 20]);
    expect(most).toBe(2);
    expect(await mapAtMost([], 4, async (x: number) => x)).toEqual([]);
  });
});
