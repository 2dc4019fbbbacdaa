import { describe, expect, it } from "vitest";
import { StartGate } from "./start-gate.ts";

// In-process scheduling only: proves no transport and no host.
describe("StartGate: cold starts bounded by slots, warm claims by ready members (pure, proves no transport)", () => {
  it("hands out slots up to the limit, then serves waiters in arrival order as slots free", async () => {
    const g = new StartGate(2);
    expect(await g.acquire(false)).toBe("slot");
    expect(await g.acquire(true)).toBe("slot");
    const order: string[] = [];
    const a = g.acquire(false).then((t) => order.push(`a:${t}`));
    const b = g.acquire(false).then((t) => order.push(`b:${t}`));
    g.releaseSlot();
    await a;
    expect(order).toEqual(["a:slot"]);
    g.releaseSlot();
    await b;
    expect(order).toEqual(["a:slot", "b:slot"]);
  });

  it("a ready member goes to the first waiter that may take one, ahead of cold-start waiters, while every slot is held", async () => {
    const g = new StartGate(1);
    await g.acquire(false);
    const got: string[] = [];
    const cold = g.acquire(false).then((t) => got.push(`cold:${t}`));
    const warm = g.acquire(true).then((t) => got.push(`warm:${t}`));
    g.memberReady();
    await warm;
    expect(got).toEqual(["warm:member"]);
    g.releaseSlot();
    await cold;
    expect(got).toEqual(["warm:member", "cold:slot"]);
  });

  it("serves replacements of lost runtimes before the first placements that came earlier, a freed slot and a ready member alike", async () => {
    const g = new StartGate(1);
    await g.acquire(false);
    const got: string[] = [];
    const firstCold = g.acquire(false).then((t) => got.push(`first-cold:${t}`));
    const firstWarm = g.acquire(true).then((t) => got.push(`first-warm:${t}`));
    const replacementA = g.acquire(true, true).then((t) => got.push(`replacement-a:${t}`));
    const replacementB = g.acquire(true, true).then((t) => got.push(`replacement-b:${t}`));
    expect(g.waiters).toBe(4);
    g.releaseSlot();
    await replacementA;
    g.memberReady();
    await replacementB;
    expect(got).toEqual(["replacement-a:slot", "replacement-b:member"]);
    g.memberReady();
    await firstWarm;
    g.releaseSlot();
    await firstCold;
    expect(got).toEqual(["replacement-a:slot", "replacement-b:member", "first-warm:member", "first-cold:slot"]);
  });

  it("prefers a known ready member over a free slot; memberTaken forgets one claimed by a slot holder", async () => {
    const g = new StartGate(1);
    g.memberReady();
    g.memberReady();
    expect(await g.acquire(true)).toBe("member");
    g.memberTaken();
    expect(await g.acquire(true)).toBe("slot");
    expect(() => new StartGate(0)).toThrow(RangeError);
  });
});
