import { describe, expect, it } from "vitest";
import { admitRun, availableSlots, newRunsHeld, nextToStart, runsToStart, type QueueFacts } from "./local-queue.ts";

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

describe("which queued run starts next (pure: no transport)", () => {
  const run = (tenantId: string, resume = false) => ({ tenantId, resume });
  const going = (m: Record<string, number>) => (t: string) => m[t] ?? 0;

  it("a quiet tenant's run starts before a flood's runs queued ahead of it; among equals, the oldest", () => {
    const q = [run("flood"), run("flood"), run("flood"), run("steady")];
    expect(nextToStart(q, going({ flood: 4 }))).toBe(3);
    expect(nextToStart(q, going({ flood: 4, steady: 4 }))).toBe(0);
    expect(nextToStart([run("a"), run("b"), run("a")], going({}))).toBe(0);
  });

  it("with one tenant it is first-in first-out; resumes go first whatever the tenants hold; an empty queue has none", () => {
    expect(nextToStart([run("a"), run("a")], going({ a: 3 }))).toBe(0);
    expect(nextToStart([run("b"), run("a", true)], going({ a: 9 }))).toBe(1);
    expect(nextToStart([], going({}))).toBe(-1);
  });

  it("while resumes are being checked, each holds a free run slot: new runs start only beyond them, a queued resume still starts", () => {
    const two = { ...sizing, maxConcurrentRuns: 2 };
    expect(newRunsHeld(facts({}), sizing, 0)).toBe(false);
    expect(newRunsHeld(facts({}), sizing, 1)).toBe(true);
    expect(newRunsHeld(facts({}), two, 1)).toBe(false);
    expect(newRunsHeld(facts({ running: 1 }), two, 1)).toBe(true);
    expect(nextToStart([run("a"), run("b")], going({}), true)).toBe(-1);
    expect(nextToStart([run("a"), run("b", true)], going({}), true)).toBe(1);
  });
});
