import { describe, expect, it } from "vitest";
import { memoryCheckpointStore } from "./checkpoints.ts";
import { fold } from "./fold.ts";

describe("fold and checkpoints", () => {
  it("folds left to right from the initial state and returns the initial state for no events", () => {
    const evolve = (s: readonly string[], e: string) => [...s, e];
    expect(fold(["a", "b", "c"], evolve, [] as readonly string[])).toEqual(["a", "b", "c"]);
    expect(fold([], evolve, ["x"] as readonly string[])).toEqual(["x"]);
  });

  it("gives the same state when the same events are folded twice", () => {
    const events = [3, 1, 4, 1, 5];
    const evolve = (s: { sum: number; seen: number[] }, e: number) => ({ sum: s.sum + e, seen: [...s.seen, e] });
    const init = { sum: 0, seen: [] as number[] };
    expect(fold(events, evolve, init)).toEqual(fold(events, evolve, init));
    expect(init).toEqual({ sum: 0, seen: [] });
  });

  it("starts a projection never run at checkpoint 0 and lets a rebuild reset it to 0", async () => {
    const cp = memoryCheckpointStore({ other: 9 });
    expect(await cp.load("p")).toBe(0);
    await cp.save("p", 42);
    expect(await cp.load("p")).toBe(42);
    await cp.save("p", 0);
    expect(await cp.load("p")).toBe(0);
    expect(await cp.load("other")).toBe(9);
  });
});
