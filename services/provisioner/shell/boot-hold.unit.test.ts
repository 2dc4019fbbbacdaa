import { describe, expect, it } from "vitest";
import { BOOT_HOLD_LOSS_MS, BOOT_HOLD_MAX_MS, BootHold } from "./boot-hold.ts";

// Pure: a clock and flags in memory, the checks driven by the test (proves no process or transport).
function rig() {
  const s = { now: 0, busy: false, urgent: false, booting: 4, holds: [] as boolean[], checking: false };
  const hold = new BootHold({
    hold: (on) => {
      s.holds.push(on);
      return s.booting;
    },
    busy: () => s.busy,
    urgent: () => s.urgent,
    now: () => s.now,
    every: () => {
      s.checking = true;
      return () => (s.checking = false);
    },
  });
  return { s, hold };
}

describe("BootHold (pure: proves no transport)", () => {
  it("holds while a start is in flight and continues the boots once none is", () => {
    const { s, hold } = rig();
    s.busy = true;
    hold.poke();
    expect([s.holds, hold.holding, s.checking]).toEqual([[true], true, true]);
    hold.poke(); // a second start while held: still one hold
    s.now = 500;
    hold.check();
    expect(s.holds).toEqual([true]);
    s.busy = false;
    hold.check();
    expect([s.holds, hold.holding, s.checking]).toEqual([[true, false], false, false]);
  });

  it("after a published runtime's exit, waits for its replacement's start before it lets go", () => {
    const { s, hold } = rig();
    hold.poke(true);
    s.now = BOOT_HOLD_LOSS_MS - 1;
    hold.check();
    expect(hold.holding).toBe(true);
    s.now = BOOT_HOLD_LOSS_MS;
    hold.check();
    expect(s.holds).toEqual([true, false]);
  });

  it("never holds longer than its bound, and lets the boots run as long before the next hold", () => {
    const { s, hold } = rig();
    s.busy = true;
    hold.poke();
    s.now = BOOT_HOLD_MAX_MS - 1;
    hold.check();
    expect(hold.holding).toBe(true);
    s.now = BOOT_HOLD_MAX_MS;
    hold.check();
    expect(s.holds).toEqual([true, false]);
    s.now = 2 * BOOT_HOLD_MAX_MS - 1;
    hold.poke();
    expect(hold.holding).toBe(false);
    s.now = 2 * BOOT_HOLD_MAX_MS;
    hold.poke();
    expect(s.holds).toEqual([true, false, true]);
  });

  it("never holds the boots a waiting scale-out needs, and lets go as soon as one waits", () => {
    const { s, hold } = rig();
    s.urgent = true;
    s.busy = true;
    hold.poke();
    expect(s.holds).toEqual([]);
    s.urgent = false;
    hold.poke();
    expect(s.holds).toEqual([true]);
    s.urgent = true;
    hold.check();
    expect(s.holds).toEqual([true, false]);
  });

  it("a poke that finds no member booting holds nothing and keeps no later poke from holding", () => {
    const { s, hold } = rig();
    s.booting = 0;
    s.busy = true;
    hold.poke();
    expect([hold.holding, s.checking]).toEqual([false, false]);
    s.booting = 3;
    s.now = 100;
    hold.poke();
    expect([s.holds, hold.holding]).toEqual([[true, true], true]);
  });

  it("stop() continues held boots, and is a no-op otherwise", () => {
    const { s, hold } = rig();
    hold.stop();
    expect(s.holds).toEqual([]);
    s.busy = true;
    hold.poke();
    hold.stop();
    expect([s.holds, s.checking]).toEqual([[true, false], false]);
  });
});
