import { describe, expect, it } from "vitest";
import { admitRun, availableSlots, runsToStart, type QueueFacts } from "./local-queue.ts";

const sizing = { workers: 2, maxConcurrentRuns: 1, localQueueCapacity: 2, maxWorkersPerRun: 1 };
const facts = (f: Partial<QueueFacts>): QueueFacts => ({ queued: 0, running: 0, paused: false, draining: false, ...f });

describe("local queue admission", () => {
  it("accepts one run per free run slot plus localQueueCapacity waiting runs, then refuses with local-queue-full and the counts", () => {
    expect(admitRun(facts({}), sizing)).toEqual({ accepted: true });
    expect(admitRun(facts({ running: 1, queued: 1 }), sizing)).toEqual({ accepted: true });
    expect(admitRun(facts({ running: 1, queued: 2 }), sizing)).toEqual({
      accepted: false,
      code: "local-queue-full",
      detail: "local queue full: queued=2/2, running=1/1, paused=false",
    });
  });

  it("a paused queue holds at most localQueueCapacity runs: free run slots do not count while nothing may start", () => {
    expect(availableSlots(facts({ paused: true, queued: 1 }), sizing)).toBe(1);
    expect(admitRun(facts({ paused: true, queued: 2 }), sizing).accepted).toBe(false);
  });

  it("a draining runtime refuses new runs with runtime-draining", () => {
    expect(admitRun(facts({ draining: true }), sizing)).toMatchObject({ accepted: false, code: "runtime-draining" });
  });

  it("starts queued runs only into free run slots, none while paused, and still finishes accepted work while draining", () => {
    expect(runsToStart(facts({ queued: 2 }), sizing)).toBe(1);
    expect(runsToStart(facts({ queued: 2, running: 1 }), sizing)).toBe(0);
    expect(runsToStart(facts({ queued: 2, paused: true }), sizing)).toBe(0);
    expect(runsToStart(facts({ queued: 2, draining: true }), sizing)).toBe(1);
  });
});
