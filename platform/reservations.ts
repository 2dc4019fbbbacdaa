import type { Redis } from "ioredis";

/**
 * Atomic slot reservations in Redis (admission-and-capacity.md "Admission" step 3). One hash per
 * runtime: field = SharedRunId, value = expiry (ms). The Lua script drops expired entries, then
 * either confirms an existing reservation for the same run (a retry never reserves twice) or
 * reserves iff fewer than `slots` are held. Reservations are hot state: they expire by themselves
 * and are rebuilt from `run.admitted` events without an outcome (see rebuild in the capacity service).
 */
const RESERVE = `
local key, run, slots, now, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local all = redis.call('HGETALL', key)
for i = 1, #all, 2 do
  if tonumber(all[i + 1]) <= now then redis.call('HDEL', key, all[i]) end
end
if redis.call('HEXISTS', key, run) == 1 then
  redis.call('HSET', key, run, now + ttl)
  return 2
end
if redis.call('HLEN', key) >= slots then return 0 end
redis.call('HSET', key, run, now + ttl)
redis.call('PEXPIRE', key, ttl * 2)
return 1`;

const COUNT = `
local key, now = KEYS[1], tonumber(ARGV[1])
local all = redis.call('HGETALL', key)
local n = 0
for i = 1, #all, 2 do
  if tonumber(all[i + 1]) > now then n = n + 1 end
end
return n`;

export type ReserveOutcome = "reserved" | "already-reserved" | "full";

export interface Reservations {
  /** Reserves one slot of `runtimeInstanceId` for `sharedRunId` if fewer than `slots` are held. */
  reserve(
    runtimeInstanceId: string,
    sharedRunId: string,
    slots: number,
    ttlMs: number,
    now: number,
  ): Promise<ReserveOutcome>;
  /** Shortens (e.g. after dispatch, until the heartbeat shows the run) or extends a reservation. */
  extend(runtimeInstanceId: string, sharedRunId: string, untilMs: number): Promise<void>;
  release(runtimeInstanceId: string, sharedRunId: string): Promise<void>;
  /** Unexpired reservations held on the runtime. */
  count(runtimeInstanceId: string, now: number): Promise<number>;
}

export function redisReservations(redis: Redis, controlPlaneId: string): Reservations {
  const key = (rt: string) => `drover:${controlPlaneId}:resv:${rt}`;
  return {
    async reserve(rt, run, slots, ttlMs, now) {
      const r = Number(await redis.eval(RESERVE, 1, key(rt), run, slots, now, ttlMs));
      return r === 1 ? "reserved" : r === 2 ? "already-reserved" : "full";
    },
    async extend(rt, run, untilMs) {
      await redis.hset(key(rt), run, untilMs);
    },
    async release(rt, run) {
      await redis.hdel(key(rt), run);
    },
    async count(rt, now) {
      return Number(await redis.eval(COUNT, 1, key(rt), now));
    },
  };
}
