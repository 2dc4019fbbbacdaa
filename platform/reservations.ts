import type { Redis, Result } from "ioredis";
import { capacityViewKeys, LIVE_FN } from "./capacity-view.ts";

/**
 * Atomic slot reservations in Redis (admission-and-capacity.md "Admission" step 3). Two sorted sets
 * per runtime: `e` holds every reservation (member = SharedRunId, score = expiry, ms), `a` the ones
 * the runtime accepted (score = acceptedAt). The Lua script drops expired entries, then either
 * confirms an existing reservation for the same run (a retry never reserves twice) or reserves iff
 * fewer than `slots` are held. `slots` is the free places of the runtime's latest heartbeat, taken at
 * `beatAt`: a reservation whose run was accepted before that beat is already counted by it and is not
 * counted again (without this, each run dispatched in the last 3 heartbeats counted twice: a busy
 * runtime looked full while places were free). So the places held are ZCARD(e) − ZCOUNT(a, ≤ beatAt):
 * O(log n) per reservation, where the former hash was read whole by every reserve and count (a busy
 * runtime holds a reservation per run dispatched in its last 3 heartbeats: hundreds in a burst).
 * Reservations are hot state: they expire by themselves and are rebuilt from `run.admitted` events
 * without an outcome (see rebuild in the capacity service).
 */
const EXPIRE = `
local function expire(e, a, now)
  local dead = redis.call('ZRANGEBYSCORE', e, '-inf', now)
  for i = 1, #dead do redis.call('ZREM', a, dead[i]) end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', e, '-inf', now) end
end`;

/** `reserve(e, a, run, slots, now, ttl, beatAt)` → 1 reserved, 2 already reserved, 0 full (also in tenant-claims.ts' claim-and-reserve). */
export const RESERVE_FN = `${EXPIRE}
local function reserve(e, a, run, slots, now, ttl, beatAt)
  expire(e, a, now)
  if redis.call('ZSCORE', e, run) then
    redis.call('ZADD', e, now + ttl, run)
    redis.call('ZREM', a, run)
    return 2
  end
  if redis.call('ZCARD', e) - redis.call('ZCOUNT', a, '-inf', beatAt) >= slots then return 0 end
  redis.call('ZADD', e, now + ttl, run)
  redis.call('PEXPIRE', e, ttl * 2)
  redis.call('PEXPIRE', a, ttl * 2)
  return 1
end`;

const RESERVE = `${RESERVE_FN}
return reserve(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5])`;

/** The script's answer as an outcome. */
export const reserveOutcome = (n: number): ReserveOutcome =>
  n === 1 ? "reserved" : n === 2 ? "already-reserved" : "full";

/** A runtime's reservation keys: every reservation, and the ones it accepted. */
export const reservationKeys = (controlPlaneId: string, rt: string) =>
  [`${keyPrefix(controlPlaneId)}${rt}:e`, `${keyPrefix(controlPlaneId)}${rt}:a`] as const;
const keyPrefix = (controlPlaneId: string) => `drover:${controlPlaneId}:resv:`;

/**
 * KEYS: the capacity view's live and index sets; ARGV: its descriptor key prefix, the reservation
 * key prefix (`keyPrefix`), now, then pairs runtime id, beat time. Every live descriptor
 * (capacity-view.ts `live_descriptors`), each followed by the beat time its count was taken for (the
 * one given for its id, else -1: every reservation counted) and the count, as COUNT makes it.
 */
const LIVE_COUNTED = `${LIVE_FN}
${EXPIRE}
local beatAt = {}
for i = 4, #ARGV, 2 do beatAt[ARGV[i]] = ARGV[i + 1] end
local ids, ds = live_descriptors(KEYS[1], KEYS[2], ARGV[1])
local now = tonumber(ARGV[3])
local out = {}
for i, id in ipairs(ids) do
  local e, a = ARGV[2] .. id .. ':e', ARGV[2] .. id .. ':a'
  expire(e, a, now)
  local b = beatAt[id] or '-1'
  out[#out + 1] = ds[i]
  out[#out + 1] = b
  out[#out + 1] = redis.call('ZCARD', e) - redis.call('ZCOUNT', a, '-inf', b)
end
return out`;

/** A live descriptor of the capacity view (its JSON) and its reservations counted for the beat time `countedFor`. */
export interface CountedDescriptor {
  readonly json: string;
  readonly countedFor: number;
  readonly reserved: number;
}

const COUNT = `${EXPIRE}
expire(KEYS[1], KEYS[2], tonumber(ARGV[1]))
return redis.call('ZCARD', KEYS[1]) - redis.call('ZCOUNT', KEYS[2], '-inf', ARGV[2])`;

/**
 * `extend(e, a, run, until, acceptedAt)`, acceptedAt '' when not accepted (also in tenant-claims.ts'
 * confirm-and-extend). The keys are made to outlive `until` (never shortened: GT, Redis ≥ 7): a key
 * expires with every reservation in it, and one extended past the expiry its last reserve set
 * (2 × that reservation's ttl) vanished early, every slot of the runtime looking free at once (a
 * two-replica test placed 12 runs on 8 slots once no reserve had succeeded for 3 s).
 */
export const EXTEND_FN = `
local function extend(e, a, run, untilMs, acceptedAt)
  redis.call('ZADD', e, untilMs, run)
  if redis.call('PTTL', e) < 0 then redis.call('PEXPIREAT', e, untilMs) else redis.call('PEXPIREAT', e, untilMs, 'GT') end
  if acceptedAt == '' then redis.call('ZREM', a, run) else redis.call('ZADD', a, acceptedAt, run) end
  local ttl = redis.call('PTTL', e)
  if ttl > 0 then redis.call('PEXPIRE', a, ttl) end
  return 1
end`;

/** ARGV: run, until, acceptedAt ('' when not accepted). */
const EXTEND = `${EXTEND_FN}
return extend(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3])`;

const RELEASE = `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1`;

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
  /**
   * The capacity view's live descriptors (what CapacityViewStore.live reads, as JSON) with each
   * one's `count`, for the beat time `beatAts` gives for its id (-1, every reservation, when none),
   * in one round trip: an admission pass's capacity read. The count is the descriptor's own only
   * where that beat time is its current beat's; `countedFor` says which one was used, so the caller
   * counts the others again (`countMany`). Absent where the view is not in the same Redis.
   */
  liveWithCounts?(now: number, beatAts: ReadonlyMap<string, number>): Promise<CountedDescriptor[]>;
}

// The scripts as commands of every client and pipeline (ioredis' documented declaration merging).
declare module "ioredis" {
  interface RedisCommander<Context> {
    drReserve(
      held: string,
      accepted: string,
      run: string,
      slots: number,
      now: number,
      ttl: number,
      beatAt: number,
    ): Result<number, Context>;
    drCount(held: string, accepted: string, now: number, beatAt: number): Result<number, Context>;
    drExtend(held: string, accepted: string, run: string, until: number, acceptedAt: string): Result<number, Context>;
    drRelease(held: string, accepted: string, run: string): Result<number, Context>;
    drLiveCounted(live: string, index: string, ...args: (string | number)[]): Result<string[], Context>;
  }
}

const scripted = new WeakSet<Redis>();

export function redisReservations(redis: Redis, controlPlaneId: string): Reservations {
  const keys = (rt: string) => reservationKeys(controlPlaneId, rt);
  // EVALSHA (ioredis loads the script once per connection) instead of sending the script every call.
  if (!scripted.has(redis)) {
    scripted.add(redis);
    redis.defineCommand("drReserve", { numberOfKeys: 2, lua: RESERVE });
    redis.defineCommand("drCount", { numberOfKeys: 2, lua: COUNT });
    redis.defineCommand("drExtend", { numberOfKeys: 2, lua: EXTEND });
    redis.defineCommand("drRelease", { numberOfKeys: 2, lua: RELEASE });
    redis.defineCommand("drLiveCounted", { numberOfKeys: 2, lua: LIVE_COUNTED });
  }
  const view = capacityViewKeys(controlPlaneId);
  return {
    async reserve(rt, run, slots, ttlMs, now, beatAt = -1) {
      return reserveOutcome(Number(await redis.drReserve(...keys(rt), run, slots, now, ttlMs, beatAt)));
    },
    async extend(rt, run, untilMs, acceptedAt) {
      await redis.drExtend(...keys(rt), run, untilMs, acceptedAt === undefined ? "" : String(acceptedAt));
    },
    async release(rt, run) {
      await redis.drRelease(...keys(rt), run);
    },
    async count(rt, now, beatAt = -1) {
      return Number(await redis.drCount(...keys(rt), now, beatAt));
    },
    async countMany(rts, now, beatAts) {
      if (rts.length === 0) return [];
      const pipe = redis.pipeline();
      rts.forEach((rt, i) => pipe.drCount(...keys(rt), now, beatAts?.[i] ?? -1));
      const rows = (await pipe.exec()) ?? [];
      return rows.map(([err, n]) => {
        if (err) throw err;
        return Number(n);
      });
    },
    async liveWithCounts(now, beatAts) {
      const pairs = [...beatAts].flatMap(([id, at]) => [id, at]);
      const rows = await redis.drLiveCounted(
        view.live,
        view.index,
        view.descriptorPrefix,
        keyPrefix(controlPlaneId),
        now,
        ...pairs,
      );
      const out: CountedDescriptor[] = [];
      for (let i = 0; i + 2 < rows.length; i += 3)
        out.push({ json: rows[i]!, countedFor: Number(rows[i + 1]), reserved: Number(rows[i + 2]) });
      return out;
    },
  };
}
