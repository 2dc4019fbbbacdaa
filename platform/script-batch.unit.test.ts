import { describe, expect, it } from "vitest";
import { scriptBatcher } from "./script-batch.ts";

describe("scriptBatcher", () => {
  it("sends a call alone when none is in flight, and holds the calls made meanwhile for one batch at the check phase", async () => {
    const sent: number[][] = [];
    const call = scriptBatcher(async (items: readonly number[]) => {
      sent.push([...items]);
      await new Promise((ok) => setTimeout(ok, 5));
      return items.map((i) => i * 10);
    });
    const first = call(1);
    expect(sent).toEqual([[1]]); // at once
    const rest = [call(2), call(3), call(4)];
    expect(sent).toEqual([[1]]); // held while the first is in flight
    expect(await Promise.all([first, ...rest])).toEqual([10, 20, 30, 40]);
    expect(sent).toEqual([[1], [2, 3, 4]]);
    // Nothing in flight again: the next call leaves alone at once.
    const last = call(5);
    expect(sent).toEqual([[1], [2, 3, 4], [5]]);
    expect(await last).toBe(50);
  });

  it("fails every call of a batch with the batch's error, and the batcher goes on", async () => {
    let fail = true;
    const call = scriptBatcher(async (items: readonly string[]) => {
      await Promise.resolve();
      if (fail) throw new Error("redis down");
      return items.map((s) => s.toUpperCase());
    });
    const all = await Promise.allSettled([call("a"), call("b"), call("c")]);
    expect(all.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    fail = false;
    expect(await Promise.all([call("x"), call("y")])).toEqual(["X", "Y"]);
  });

  it("a call made while others are held joins them, so calls leave in the order made", async () => {
    const sent: string[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((ok) => (release = ok));
    const call = scriptBatcher(async (items: readonly string[]) => {
      sent.push([...items]);
      if (items[0] === "a") await gate;
      return items;
    });
    const a = call("a");
    const b = call("b"); // held: a is in flight
    release();
    await a; // a answered: nothing in flight, b still held
    const c = call("c"); // joins b rather than overtaking it
    await Promise.all([b, c]);
    expect(sent).toEqual([["a"], ["b", "c"]]);
  });
});
