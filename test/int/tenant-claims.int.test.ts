import { Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { redisReservations } from "../../platform/reservations.ts";
import { redisTenantClaims } from "../../platform/tenant-claims.ts";
import { uniqueName } from "../support/isolation.ts";

/**
 * Tenant quota claims (platform/tenant-claims.ts) against a real Redis: what makes
 * `maxConcurrentRuns` hold across admission replicas whose folds of the log lag each other.
 */
describe("tenant quota claims (boundary: real Redis, its Lua script)", () => {
  let redis: Redis;
  let cp: string;
  beforeAll(() => {
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1, db: 12 });
  });
  afterAll(() => redis.disconnect());
  beforeEach(() => {
    cp = uniqueName("cp");
  });

  it("replicas whose folds saw none of each other's placements admit no more than the limit between them", async () => {
    const [a, b] = [redisTenantClaims(redis, cp), redisTenantClaims(redis, cp)];
    const now = Date.now();
    // Ten placements at once, alternating replicas, each replica's fold holding nothing (0 active, position 0).
    const results = await Promise.all(
      [...Array(10).keys()].map((i) => (i % 2 ? a : b).claim("acme", `r-${i}`, 4, 0, 0, now)),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(4);
    expect(results.filter((r) => !r.ok).every((r) => r.count === 4)).toBe(true);
    // A claim is the run's: asking again for a run that holds one answers yes and takes nothing more.
    const held = results.findIndex((r) => r.ok);
    expect((await b.claim("acme", `r-${held}`, 4, 0, 0, now)).ok).toBe(true);
    // Another tenant is counted apart.
    expect((await a.claim("globex", "r-0", 4, 0, 0, now)).ok).toBe(true);
  });

  it("a decision counts in the claims until the caller's fold reaches its sequence, then only in the fold", async () => {
    const c = redisTenantClaims(redis, cp);
    const now = Date.now();
    expect((await c.claim("acme", "r-1", 2, 0, 10, now)).ok).toBe(true);
    await c.confirm("acme", "r-1", 15, now);
    // A fold at sequence 14 has not seen r-1's decision: 1 active there + the claim = full.
    expect(await c.claim("acme", "r-2", 2, 1, 14, now)).toEqual({ ok: false, count: 2 });
    // A fold at 15 counts r-1 itself (folded 1): the claim is not counted again, so r-2 fits.
    expect(await c.claim("acme", "r-2", 2, 1, 15, now)).toEqual({ ok: true, count: 1 });
    // Released claims free their place.
    await c.release("acme", "r-2");
    expect((await c.claim("acme", "r-3", 2, 1, 15, now)).ok).toBe(true);
  });

  it("a placement abandoned mid-way (its replica died) holds its place only until its claim expires", async () => {
    const c = redisTenantClaims(redis, cp, { pendingTtlMs: 300 });
    const now = Date.now();
    expect((await c.claim("acme", "r-dead", 1, 0, 0, now)).ok).toBe(true);
    expect((await c.claim("acme", "r-next", 1, 0, 0, now + 100)).ok).toBe(false);
    expect((await c.claim("acme", "r-next", 1, 0, 0, now + 301)).ok).toBe(true);
  });

  it("thousands of decided claims count only beyond the caller's fold, and expire by themselves", async () => {
    const c = redisTenantClaims(redis, cp, { decidedTtlMs: 1_000 });
    const now = Date.now();
    // 3 000 placements decided at sequences 1..3000 (a burst), one replica.
    for (let i = 1; i <= 3000; i += 500) {
      await Promise.all(
        [...Array(500).keys()].map(async (k) => {
          const run = `r-${i + k}`;
          expect((await c.claim("acme", run, 10_000, 0, 0, now)).ok).toBe(true);
          await c.confirm("acme", run, i + k, now);
        }),
      );
    }
    // A fold at 2 990 holds 2 990 of them: the 10 beyond it count once more, the rest not again.
    expect(await c.claim("acme", "r-new", 10_000, 2990, 2990, now)).toEqual({ ok: true, count: 3000 });
    await c.release("acme", "r-new");
    expect(await c.claim("acme", "r-full", 3000, 2990, 2990, now)).toEqual({ ok: false, count: 3000 });
    // Past their TTL the decided claims count nowhere, whatever the caller's fold.
    expect(await c.claim("acme", "r-late", 1, 0, 0, now + 1_001)).toEqual({ ok: true, count: 0 });
  });
  it("claim-and-reserve reserves the slot only when the claim is granted, as the two calls do one after the other", async () => {
    const c = redisTenantClaims(redis, cp);
    const resv = redisReservations(redis, cp);
    const now = Date.now();
    const slot = { runtimeInstanceId: "rt-1", slots: 1, ttlMs: 60_000 };
    // Granted: the claim is held and the runtime's one free slot is the run's.
    expect(await c.claimAndReserve("acme", "r-1", 2, 0, 0, now, slot)).toEqual({
      ok: true,
      count: 0,
      reserved: "reserved",
    });
    expect(await resv.count("rt-1", now)).toBe(1);
    // Asked again for the same run: its claim (not counted against itself) and its reservation, nothing more.
    expect(await c.claimAndReserve("acme", "r-1", 2, 0, 0, now, slot)).toEqual({
      ok: true,
      count: 0,
      reserved: "already-reserved",
    });
    expect(await resv.count("rt-1", now)).toBe(1);
    // Granted claim, full runtime: the claim is held (the caller tries the next runtime or releases it).
    expect(await c.claimAndReserve("acme", "r-2", 2, 0, 0, now, slot)).toEqual({
      ok: true,
      count: 1,
      reserved: "full",
    });
    // Refused claim (the tenant is full across replicas): no reservation is made on any runtime.
    const other = { ...slot, runtimeInstanceId: "rt-2" };
    expect(await c.claimAndReserve("acme", "r-3", 2, 0, 0, now, other)).toEqual({ ok: false, count: 2 });
    expect(await resv.count("rt-2", now)).toBe(0);
    // A reservation made here is the reservations module's own: released there, the slot is free again.
    await resv.release("rt-1", "r-1");
    await c.release("acme", "r-2");
    expect(await c.claimAndReserve("acme", "r-2", 2, 0, 0, now, slot)).toEqual({
      ok: true,
      count: 1,
      reserved: "reserved",
    });
  });
  it("confirms a claim and extends its run's slot reservation in one call, as confirm and extend do apart", async () => {
    const cpx = `${cp}-ce`;
    const c = redisTenantClaims(redis, cpx);
    const resv = redisReservations(redis, cpx);
    const now = Date.now();
    const slot = { runtimeInstanceId: "rt-1", slots: 1, ttlMs: 100 };
    expect((await c.claimAndReserve("acme", "r-1", 2, 0, 10, now, slot)).reserved).toBe("reserved");
    // Accepted at now + 1, held until now + 5 000 (its key outlives the reserve's 200 ms expiry).
    await c.confirmAndExtend("acme", "r-1", 15, now, {
      runtimeInstanceId: "rt-1",
      untilMs: now + 5_000,
      acceptedAt: now + 1,
    });
    // Confirmed: a fold at 14 counts it through the claim, a fold at 15 only itself.
    expect(await c.claim("acme", "r-2", 2, 1, 14, now)).toEqual({ ok: false, count: 2 });
    expect(await c.claim("acme", "r-2", 2, 1, 15, now)).toEqual({ ok: true, count: 1 });
    await new Promise((r) => setTimeout(r, 400));
    // Extended and accepted: held past the reserve's ttl, and left out by a beat taken after its acceptance.
    expect(await resv.count("rt-1", now + 300)).toBe(1);
    expect(await resv.count("rt-1", now + 300, now + 2)).toBe(0);
  });
  it("claim-and-reserve and confirm-and-extend calls made together share one script run, each answered as if alone and in order", async () => {
    const cpx = `${cp}-batch`;
    const c = redisTenantClaims(redis, cpx);
    const resv = redisReservations(redis, cpx);
    const now = Date.now();
    const slot = { runtimeInstanceId: "rt-1", slots: 2, ttlMs: 60_000 };
    const evalshas = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.info("commandstats"))?.[1] ?? 0);
    const before = await evalshas();
    // Six at once, tenant limit 4 and 2 slots: the first alone (none in flight), the other five in one run.
    const results = await Promise.all(
      [...Array(6).keys()].map((i) => c.claimAndReserve("acme", `r-${i}`, 4, 0, 0, now, slot)),
    );
    expect(results).toEqual([
      { ok: true, count: 0, reserved: "reserved" },
      { ok: true, count: 1, reserved: "reserved" },
      { ok: true, count: 2, reserved: "full" },
      { ok: true, count: 3, reserved: "full" },
      { ok: false, count: 4 },
      { ok: false, count: 4 },
    ]);
    expect((await evalshas()) - before).toBe(2);
    // Confirmed and extended together: each run's claim decided at its sequence, each slot accepted.
    const beforeConfirm = await evalshas();
    await Promise.all(
      [0, 1].map((i) =>
        c.confirmAndExtend("acme", `r-${i}`, 20 + i, now, {
          runtimeInstanceId: "rt-1",
          untilMs: now + 5_000,
          acceptedAt: now + 1,
        }),
      ),
    );
    expect((await evalshas()) - beforeConfirm).toBe(2);
    expect(await resv.count("rt-1", now)).toBe(2);
    expect(await resv.count("rt-1", now, now + 2)).toBe(0);
    // A fold at 20 has seen r-0's decision but not r-1's: 1 folded + r-1 + the two pending claims.
    expect(await c.claim("acme", "r-9", 5, 1, 20, now)).toEqual({ ok: true, count: 4 });
  });
  it("traced (onClaimBatch), a claim batch answers as untraced and reports its runs and when Redis ran it", async () => {
    const cpx = `${cp}-traced`;
    const seen: { runs: readonly (readonly [string, string])[]; sentAt: number; ranAt: number; answeredAt: number }[] =
      [];
    const c = redisTenantClaims(redis, cpx, { onClaimBatch: (runs, at) => seen.push({ runs, ...at }) });
    const now = Date.now();
    const slot = { runtimeInstanceId: "rt-1", slots: 1, ttlMs: 60_000 };
    const results = await Promise.all(
      [...Array(3).keys()].map((i) => c.claimAndReserve("acme", `r-${i}`, 2, 0, 0, now, slot)),
    );
    expect(results).toEqual([
      { ok: true, count: 0, reserved: "reserved" },
      { ok: true, count: 1, reserved: "full" },
      { ok: false, count: 2 },
    ]);
    // The first alone, the other two in one run, each with Redis's clock (TIME, in ms) when it ran.
    expect(seen.map((b) => b.runs)).toEqual([
      [["acme", "r-0"]],
      [
        ["acme", "r-1"],
        ["acme", "r-2"],
      ],
    ]);
    for (const b of seen) expect(Math.abs(b.ranAt - b.sentAt)).toBeLessThan(60_000);
  });
});
