import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { redisReservations } from "../../platform/reservations.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { uniqueName } from "../support/isolation.ts";

describe("slot reservations (Lua script against a real Redis)", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1 });
  });
  afterAll(() => redis.disconnect());

  it("never over-commits a runtime under 40 concurrent reservations from 4 connections for 3 slots", async () => {
    const conns = Array.from({ length: 4 }, () => new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1 }));
    try {
      for (let round = 0; round < 5; round++) {
        const cp = uniqueName("cp");
        const stores = conns.map((c) => redisReservations(c, cp));
        const results = await Promise.all(
          Array.from({ length: 40 }, (_, i) => stores[i % 4]!.reserve("rt-1", `run-${i}`, 3, 10_000, 1_000)),
        );
        expect(results.filter((r) => r === "reserved")).toHaveLength(3);
        expect(results.filter((r) => r === "full")).toHaveLength(37);
        expect(await stores[0]!.count("rt-1", 1_000)).toBe(3);
      }
    } finally {
      for (const c of conns) c.disconnect();
    }
  });

  it("confirms a retried reservation for the same run without taking a second slot", async () => {
    const r = redisReservations(redis, uniqueName("cp"));
    expect(await r.reserve("rt-1", "run-a", 2, 10_000, 1_000)).toBe("reserved");
    expect(await r.reserve("rt-1", "run-a", 2, 10_000, 1_001)).toBe("already-reserved");
    expect(await r.count("rt-1", 1_002)).toBe(1);
    expect(await r.reserve("rt-1", "run-b", 2, 10_000, 1_002)).toBe("reserved");
    expect(await r.reserve("rt-1", "run-c", 2, 10_000, 1_003)).toBe("full");
  });

  it("keeps an extended reservation past the expiry its reserve gave the runtime's keys", async () => {
    const r = redisReservations(redis, uniqueName("cp"));
    const now = Date.now();
    expect(await r.reserve("rt-1", "run-a", 2, 100, now)).toBe("reserved"); // keys expire in 200 ms
    await r.extend("rt-1", "run-a", now + 5_000, now + 1);
    await new Promise((ok) => setTimeout(ok, 400));
    expect(await r.count("rt-1", now + 300)).toBe(1);
    expect(await r.count("rt-1", now + 300, now + 2)).toBe(0); // accepted before that beat: counted by it
  });

  it("frees a slot when a reservation expires or is released", async () => {
    const r = redisReservations(redis, uniqueName("cp"));
    expect(await r.reserve("rt-1", "run-a", 1, 500, 1_000)).toBe("reserved");
    expect(await r.reserve("rt-1", "run-b", 1, 500, 1_499)).toBe("full");
    expect(await r.reserve("rt-1", "run-b", 1, 500, 1_500)).toBe("reserved");
    await r.release("rt-1", "run-b");
    expect(await r.count("rt-1", 1_600)).toBe(0);
  });

  it("counts the unexpired reservations of many runtimes in one pipelined read, in the order asked", async () => {
    const r = redisReservations(redis, uniqueName("cp"));
    await r.reserve("rt-1", "run-a", 5, 500, 1_000);
    await r.reserve("rt-1", "run-b", 5, 100, 1_000);
    await r.reserve("rt-3", "run-c", 5, 500, 1_000);
    expect(await r.countMany(["rt-3", "rt-2", "rt-1"], 1_050)).toEqual([1, 0, 2]);
    expect(await r.countMany(["rt-3", "rt-2", "rt-1"], 1_200)).toEqual([1, 0, 1]);
    expect(await r.countMany([], 1_200)).toEqual([]);
  });

  it("does not count twice a run the runtime accepted before its latest heartbeat: that beat's free places already left it out", async () => {
    const r = redisReservations(redis, uniqueName("cp"));
    expect(await r.reserve("rt-1", "run-a", 2, 10_000, 1_000, 900)).toBe("reserved");
    expect(await r.reserve("rt-1", "run-b", 2, 10_000, 1_000, 900)).toBe("reserved");
    // Both dispatched: a accepted at 1 100, b at 1 300; each counted at most until 2 000.
    await r.extend("rt-1", "run-a", 2_000, 1_100);
    await r.extend("rt-1", "run-b", 2_000, 1_300);
    expect(await r.count("rt-1", 1_400, 900)).toBe(2); // a beat taken before both
    expect(await r.countMany(["rt-1"], 1_400, [1_200])).toEqual([1]); // the beat at 1 200 shows a
    expect(await r.count("rt-1", 1_400, 1_300)).toBe(0); // the beat at 1 300 shows both
    expect(await r.count("rt-1", 1_400)).toBe(2); // no beat given: every unexpired reservation
    // Two free places by the beat at 1 200, a already in it: one more fits, not two.
    expect(await r.reserve("rt-1", "run-c", 2, 10_000, 1_400, 1_200)).toBe("reserved");
    expect(await r.reserve("rt-1", "run-d", 2, 10_000, 1_400, 1_200)).toBe("full");
    expect(await r.count("rt-1", 2_000, 1_200)).toBe(1); // a and b expired at 2 000; c is still held
  });

  it("reads the live capacity view with each runtime's count in one script, for the beat time given per runtime (else every reservation)", async () => {
    const cp = uniqueName("cp");
    const r = redisReservations(redis, cp);
    const view = redisCapacityView<{ runtimeInstanceId: string; status: string }>(redis, cp);
    await view.put("rt-1", { runtimeInstanceId: "rt-1", status: "ready" });
    await view.put("rt-2", { runtimeInstanceId: "rt-2", status: "ready" });
    await view.put("rt-3", { runtimeInstanceId: "rt-3", status: "retired" });
    await r.reserve("rt-1", "run-a", 5, 10_000, 1_000);
    await r.reserve("rt-1", "run-b", 5, 10_000, 1_000);
    await r.reserve("rt-1", "run-c", 5, 100, 1_000); // expired at 1 100
    await r.extend("rt-1", "run-a", 2_000, 1_100); // accepted at 1 100
    await r.reserve("rt-3", "run-d", 5, 10_000, 1_000);
    const rows = async (beatAts: Map<string, number>) =>
      (await r.liveWithCounts!(1_400, beatAts)).map((x) => [
        JSON.parse(x.json).runtimeInstanceId,
        x.countedFor,
        x.reserved,
      ]);
    expect(await rows(new Map())).toEqual([
      ["rt-1", -1, 2],
      ["rt-2", -1, 0],
    ]);
    // The beat at 1 200 shows run-a: as count() answers for it.
    expect(
      await rows(
        new Map([
          ["rt-1", 1_200],
          ["rt-9", 5],
        ]),
      ),
    ).toEqual([
      ["rt-1", 1_200, 1],
      ["rt-2", -1, 0],
    ]);
    expect(await r.count("rt-1", 1_400, 1_200)).toBe(1);
  });
});
