import type { Redis, Result } from "ioredis";

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
  /** Unexpired reservations held on each runtime, in one round trip (an admission pass reads them all). */
  countMany(runtimeInstanceIds: readonly string[], now: number): Promise<number[]>;
}

// The scripts as commands of every client and pipeline (ioredis' documented declaration merging).
declare module "ioredis" {
  interface RedisCommander<Context> {
    drReserve(key: string, run: string, slots: number, now: number, ttl: number): Result<number, Context>;
    drCount(key: string, now: number): Result<number, Context>;
  }
}

const scripted = new WeakSet<Redis>();

export function redisReservations(redis: Redis, controlPlaneId: string): Reservations {
  const key = (rt: string) => `drover:${controlPlaneId}:resv:${rt}`;
  // EVALSHA (ioredis loads the script once per connection) instead of sending the script every call.
  if (!scripted.has(redis)) {
    scripted.add(redis);
    redis.defineCommand("drReserve", { numberOfKeys: 1, lua: RESERVE });
    redis.defineCommand("drCount", { numberOfKeys: 1, lua: COUNT });
  }
  return {
    async reserve(rt, run, slots, ttlMs, now) {
      const out = Number(await redis.drReserve(key(rt), run, slots, now, ttlMs));
      return out === 1 ? "reserved" : out === 2 ? "already-reserved" : "full";
    },
    async extend(rt, run, untilMs) {
      await redis.hset(key(rt), run, untilMs);
    },
    async release(rt, run) {
      await redis.hdel(key(rt), run);
    },
    async count(rt, now) {
      return Number(await redis.drCount(key(rt), now));
    },
    async countMany(rts, now) {
      if (rts.length === 0) return [];
      const pipe = redis.pipeline();
      for (const rt of rts) pipe.drCount(key(rt), now);
      const rows = (await pipe.exec()) ?? [];
      return rows.map(([err, n]) => {
        if (err) throw err;
        return Number(n);
      });
    },
  };
}
