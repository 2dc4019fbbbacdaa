import { describe, expect, it } from "vitest";
import { POOL_WARM_UP_PAUSE_MS, warmUpPause, warmUpSteps, type WarmUpRun } from "./warm-up-steps.ts";

// Pure CPU over a journal of its own: no store, connection or tenant is passed in, so none is touched.
describe("warmUpSteps: the step path on a journal that keeps nothing", () => {
  it("runs whole 50-step runs, every step journaled and accepted, until the asked count", async () => {
    expect(await warmUpSteps(120)).toBe(150);
  });

  it("stops between steps once told to, without finishing its run", async () => {
    let asked = 0;
    const ran = await warmUpSteps(3_000, () => ++asked > 30);
    expect(ran).toBeGreaterThan(0);
    expect(ran).toBeLessThan(50);
  });

  it("lets pending I/O in between its steps (a binding or a command never waits for a whole run)", async () => {
    let stop = false;
    let steps = 0;
    const warming = warmUpSteps(3_000, () => (steps++, stop));
    await new Promise<void>((r) => setImmediate(r));
    stop = true;
    expect(await warming).toBe(0);
    expect(steps).toBeLessThan(5);
  });
});

describe("warmUpSteps: paced between runs", () => {
  it("starts no step of its next run until `between` settles, and tells it each whole run's cost", async () => {
    const runs: WarmUpRun[] = [];
    let release = () => undefined as void;
    let told = () => undefined as void;
    const firstRun = new Promise<void>((r) => (told = r));
    const between = (run: WarmUpRun) => {
      runs.push(run);
      told();
      return runs.length === 1 ? new Promise<void>((r) => (release = r)) : Promise.resolve();
    };
    let asked = 0;
    const warming = warmUpSteps(150, () => (asked++, false), between);
    await firstRun;
    const askedAtPause = asked;
    // Every step yields to I/O first: unpaced, these turns would run steps (and ask `stop`).
    for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
    expect(asked).toBe(askedAtPause);
    release();
    expect(await warming).toBe(150);
    expect(runs).toHaveLength(3);
    for (const r of runs) {
      expect(r.wallMs).toBeGreaterThan(0);
      expect(r.cpuMs).toBeGreaterThanOrEqual(0);
    }
  });
});

describe("warmUpPause: a warm-up that does not get its share of a core waits", () => {
  const { first, max } = POOL_WARM_UP_PAUSE_MS;
  it("does not pause a run that had at least three quarters of a core", () => {
    expect(warmUpPause(30, 40, 0)).toBe(0);
    expect(warmUpPause(45, 40, 4_000)).toBe(0);
  });

  it("pauses a contended run, twice as long each time in a row, up to the longest pause", () => {
    let pause = 0;
    const seen: number[] = [];
    for (let i = 0; i < 7; i++) seen.push((pause = warmUpPause(10, 100, pause)));
    expect(seen).toEqual([first, 2 * first, 4 * first, 8 * first, 16 * first, max, max].map((p) => Math.min(p, max)));
    expect(warmUpPause(50, 100, 0)).toBe(first);
  });
});
