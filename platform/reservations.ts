import type { Redis, Result } from "ioredis";

/**
 * Atomic slot reservations in Redis (admission-and-capacity.md "Admission" step 3). One hash per
 * runtime: field = SharedRunId, value = expiry (ms), or `expiry:acceptedAt` once the runtime accepted
 * the run. The Lua script drops expired entries, then either confirms an existing reservation for
 * the same run (a retry never reserves twice) or reserves iff fewer than `slots` are held. `slots`
 * is the free places of the runtime's latest heartbeat, taken at `beatAt`: a reservation whose run
 * was accepted before that beat is already counted by it and is not counted again (without this, each
 * run dispatched in the last 3 heartbeats counted twice: a busy runtime looked full while places were
 * free). Reservations are hot state: they expire by themselves and are rebuilt from `run.admitted`
 * events without an outcome (see rebuild in the capacity service).
 */
const HELD = `
local function held(v, now, beatAt)
  local sep = string.find(v, ':', 1, true)
  local exp = tonumber(sep and string.sub(v, 1, sep - 1) or v)
  if exp <= now then return 0 end
  if sep and tonumber(string.sub(v, sep + 1)) <= beatAt then return 0 end
  return 1
end`;

const RESERVE = `${HELD}
local key, run, slots, now, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local beatAt = tonumber(ARGV[5])
local all = redis.call('HGETALL', key)
local n = 0
for i = 1, #all, 2 do
  if held(all[i + 1], now, -1) == 0 then redis.call('HDEL', key, all[i])
  elseif all[i] ~= run then n = n + held(all[i + 1], now, beatAt) end
end
if redis.call('HEXISTS', key, run) == 1 then
  redis.call('HSET', key, run, now + ttl)
  return 2
end
if n >= slots then return 0 end
redis.call('HSET', key, run, now + ttl)
redis.call('PEXPIRE', key, ttl * 2)
return 1`;

const COUNT = `${HELD}
local key, now, beatAt = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local all = redis.call('HGETALL', key)
local n = 0
for i = 1, #all, 2 do n = n + held(all[i + 1], now, beatAt) end
return n`;

export type ReserveOutcome = "reserved" | "already-reserved" | "full";

export interface Reservations {
  /**
   * Reserves one slot of `runtimeInstanceId` for `sharedRunId` if fewer than `slots` (the free
   * places of the heartbeat taken at `beatAt`, ms) are held, not counting those that beat already shows.
   */
  reserve(
    runtimeInstanceId: string,
    sharedRunId: string,
    slots: number,
    ttlMs: number,
    now: number,
    beatAt?: number,
  ): Promise<ReserveOutcome>;
  /**
   * Shortens (e.g. after dispatch, until the heartbeat shows the run) or extends a reservation;
   * `acceptedAt`: when the runtime had accepted the run (a heartbeat taken after it counts the run).
   */
  extend(runtimeInstanceId: string, sharedRunId: string, untilMs: number, acceptedAt?: number): Promise<void>;
  release(runtimeInstanceId: string, sharedRunId: string): Promise<void>;
  /** Unexpired reservations held on the runtime that a heartbeat taken at `beatAt` does not show. */
  count(runtimeInstanceId: string, now: number, beatAt?: number): Promise<number>;
  /** `count` for many runtimes (`beatAts[i]` for the i-th), in one round trip (an admission pass reads them all). */
  countMany(runtimeInstanceIds: readonly string[], now: number, beatAts?: readonly number[]): Promise<number[]>;
}

// The scripts as commands of every client and pipeline (ioredis' documented declaration merging).
declare module "ioredis" {
  interface RedisCommander<Context> {
    drReserve(
      key: string,
      run: string,
      slots: number,
      now: number,
      ttl: number,
      beatAt: number,
    ): Result<number, Context>;
    drCount(key: string, now: number, beatAt: number): Result<number, Context>;
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
    async reserve(rt, run, slots, ttlMs, now, beatAt = -1) {
      const out = Number(await redis.drReserve(key(rt), run, slots, now, ttlMs, beatAt));
      return out === 1 ? "reserved" : out === 2 ? "already-reserved" : "full";
    },
    async extend(rt, run, untilMs, acceptedAt) {
      await redis.hset(key(rt), run, acceptedAt === undefined ? `${untilMs}` : `${untilMs}:${acceptedAt}`);
    },
    async release(rt, run) {
      await redis.hdel(key(rt), run);
    },
    async count(rt, now, beatAt = -1) {
      return Number(await redis.drCount(key(rt), now, beatAt));
    },
    async countMany(rts, now, beatAts) {
      if (rts.length === 0) return [];
      const pipe = redis.pipeline();
      rts.forEach((rt, i) => pipe.drCount(key(rt), now, beatAts?.[i] ?? -1));
      const rows = (await pipe.exec()) ?? [];
      return rows.map(([err, n]) => {
        if (err) throw err;
        return Number(n);
      });
    },
  };
}
