import type { Redis, Result } from "ioredis";
import { scriptBatcher } from "./script-batch.ts";
import { EXTEND_FN, RESERVE_FN, reservationKeys, reserveOutcome, type ReserveOutcome } from "./reservations.ts";

/**
 * Tenant quota claims in Redis: what makes `maxConcurrentRuns` hold across admission replicas (issue
 * 16). Each replica counts a tenant's active runs from its own fold of the log; what it cannot see is
 * a placement another replica made that its fold has not reached yet. So a placement first claims a
 * place here, and the Lua script admits it only if the caller's folded count plus the claims its fold
 * cannot contain — placements in progress, and decisions beyond the caller's folded sequence — stays
 * under the limit. A claim is hot state, like a slot reservation: it expires by itself (a replica that
 * died mid-placement leaks one place for `pendingTtlMs` at most), and the log stays the truth: once
 * every replica's fold holds a decision, its claim counts nowhere twice and ages out.
 *
 * Three sorted sets per tenant, so a claim costs O(log n) in the claims held, not a scan of them (a
 * burst of placements keeps thousands of decided claims for `decidedTtlMs`; scanning them all per
 * placement made Redis the most expensive process of admission, issue 15): `p` pending claims scored
 * by expiry, `d` decided claims scored by their decision's stream sequence, `x` the decided claims'
 * expiries.
 */
const CLAIM_FN = `
local function claim(p, d, x, run, limit, folded, position, now, ttl, keyTtl)
  redis.call('ZREMRANGEBYSCORE', p, '-inf', now)
  local dead = redis.call('ZRANGEBYSCORE', x, '-inf', now)
  for i = 1, #dead do redis.call('ZREM', d, dead[i]) end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', x, '-inf', now) end
  local extra = redis.call('ZCARD', p) + redis.call('ZCOUNT', d, '(' .. position, '+inf')
  local mine = redis.call('ZSCORE', p, run) ~= false
  local decided = redis.call('ZSCORE', d, run)
  if mine then extra = extra - 1 end
  if decided then
    mine = true
    if tonumber(decided) > tonumber(position) then extra = extra - 1 end
  end
  if mine then return {1, folded + extra} end
  if folded + extra >= limit then return {0, folded + extra} end
  redis.call('ZADD', p, now + ttl, run)
  for _, k in ipairs({p, d, x}) do redis.call('PEXPIRE', k, keyTtl) end
  return {1, folded + extra}
end`;
/** The claim's arguments: keys from KEYS[k + 1], arguments from ARGV[a + 1] (k, a: Lua locals). */
const CLAIM_ARGS =
  "KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), ARGV[a + 4], tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]), ARGV[a + 7]";
const CLAIM = `${CLAIM_FN}
local k, a = 0, 0
return claim(${CLAIM_ARGS})`;
/**
 * Claims and, each only if it is granted, a slot reservation (platform/reservations.ts), for any
 * number of runs in one call (5 keys and 10 arguments each, one after another), run in the order
 * given, as that many calls one after the other would: the reservation is what a placement does
 * next when no flow key sits between them, and this saves its round trip; the placements of one
 * turn of admission's event loop share the call (script-batch.ts). Per run: keys 4–5 are the
 * runtime's reservation keys; arguments 8–10 slots, ttl, beatAt. Answers {ok, count, reserve
 * outcome (−1: not tried)} per run.
 */
const CLAIM_RESERVE_MANY = `${CLAIM_FN}
${RESERVE_FN}
local out = {}
for i = 0, #KEYS / 5 - 1 do
  local k, a = i * 5, i * 10
  local c = claim(${CLAIM_ARGS})
  if c[1] == 0 then
    out[i + 1] = {0, c[2], -1}
  else
    out[i + 1] = {1, c[2], reserve(KEYS[k + 4], KEYS[k + 5], ARGV[a + 1], tonumber(ARGV[a + 8]), tonumber(ARGV[a + 5]), tonumber(ARGV[a + 9]), ARGV[a + 10])}
  end
end
return out`;
/** Tracing only (`onClaimBatch`): the same, with Redis's clock (TIME: seconds, microseconds) when it ran, last. */
const CLAIM_RESERVE_MANY_TIMED = CLAIM_RESERVE_MANY.replace(
  /return out$/,
  "out[#out + 1] = redis.call('TIME')\nreturn out",
);
const CONFIRM_FN = `
local function confirm(p, d, x, run, seq, expiry, keyTtl)
  redis.call('ZREM', p, run)
  redis.call('ZADD', d, seq, run)
  redis.call('ZADD', x, expiry, run)
  for _, k in ipairs({p, d, x}) do redis.call('PEXPIRE', k, keyTtl) end
  return 1
end`;
const CONFIRM = `${CONFIRM_FN}
return confirm(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4])`;
/**
 * Confirms and slot reservations' extends (platform/reservations.ts) for any number of runs in one
 * call (5 keys and 6 arguments each, run in the order given): what a placement does once the
 * runtime accepted its run (keys 4–5 the runtime's reservation keys, arguments 5–6 until and
 * acceptedAt), one Redis round trip per placement less (issue 15); the answers of one turn of the
 * event loop share the call (script-batch.ts).
 */
const CONFIRM_EXTEND_MANY = `${CONFIRM_FN}
${EXTEND_FN}
for i = 0, #KEYS / 5 - 1 do
  local k, a = i * 5, i * 6
  confirm(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4])
  extend(KEYS[k + 4], KEYS[k + 5], ARGV[a + 1], ARGV[a + 5], ARGV[a + 6])
end
return 1`;
const RELEASE = `
for _, k in ipairs(KEYS) do redis.call('ZREM', k, ARGV[1]) end
return 1`;

declare module "ioredis" {
  interface RedisCommander<Context> {
    drClaim(
      pending: string,
      decided: string,
      expiries: string,
      run: string,
      limit: number,
      folded: number,
      position: number,
      now: number,
      ttl: number,
      keyTtl: number,
    ): Result<[number, number], Context>;
    drClaimConfirm(
      pending: string,
      decided: string,
      expiries: string,
      run: string,
      seq: number,
      expiry: number,
      keyTtl: number,
    ): Result<number, Context>;
    drClaimRelease(pending: string, decided: string, expiries: string, run: string): Result<number, Context>;
    /** `numberOfKeys` (5 per run), then every run's 5 keys, then every run's 6 arguments. */
    drClaimConfirmExtendMany(numberOfKeys: number, ...keysThenArgs: (string | number)[]): Result<number, Context>;
    /** `numberOfKeys` (5 per run), then every run's 5 keys, then every run's 10 arguments. */
    drClaimReserveMany(
      numberOfKeys: number,
      ...keysThenArgs: (string | number)[]
    ): Result<[number, number, number][], Context>;
    /** drClaimReserveMany, and Redis's TIME when it ran as a last element (tracing). */
    drClaimReserveManyTimed(
      numberOfKeys: number,
      ...keysThenArgs: (string | number)[]
    ): Result<[number, number, number][], Context>;
  }
}

export interface TenantClaims {
  /**
   * Claims a place of the tenant's `limit` for `sharedRunId`, given the caller's folded count of the
   * tenant's active runs (`folded`, which must not count this run) and the last stream sequence its
   * fold applied (`position`). Answers whether it may place the run and the count across replicas.
   */
  claim(
    tenantId: string,
    sharedRunId: string,
    limit: number,
    folded: number,
    position: number,
    now: number,
  ): Promise<{ readonly ok: boolean; readonly count: number }>;
  /**
   * `claim`, and only if it is granted a slot reservation as Reservations.reserve makes it (`reserved`,
   * undefined when the claim was refused), in one round trip.
   */
  claimAndReserve(
    tenantId: string,
    sharedRunId: string,
    limit: number,
    folded: number,
    position: number,
    now: number,
    slot: {
      readonly runtimeInstanceId: string;
      readonly slots: number;
      readonly ttlMs: number;
      readonly beatAt?: number;
    },
  ): Promise<{ readonly ok: boolean; readonly count: number; readonly reserved?: ReserveOutcome }>;
  /** The run's decision is in the log at `seq`: counted by every fold that reached it, by the claim until then. */
  confirm(tenantId: string, sharedRunId: string, seq: number, now: number): Promise<void>;
  /**
   * `confirm`, and the run's slot reservation extended as Reservations.extend does it (`until`, and
   * when the runtime accepted the run), in one round trip.
   */
  confirmAndExtend(
    tenantId: string,
    sharedRunId: string,
    seq: number,
    now: number,
    slot: { readonly runtimeInstanceId: string; readonly untilMs: number; readonly acceptedAt?: number },
  ): Promise<void>;
  /** The run was not placed after all. */
  release(tenantId: string, sharedRunId: string): Promise<void>;
}

const scripted = new WeakSet<Redis>();

export function redisTenantClaims(
  redis: Redis,
  controlPlaneId: string,
  o: {
    readonly pendingTtlMs?: number;
    readonly decidedTtlMs?: number;
    /**
     * Tracing only: each claim batch's runs (tenant, run), when it was sent and answered (Date.now())
     * and when Redis ran it (its TIME, ms with a fraction).
     */
    readonly onClaimBatch?: (
      runs: readonly (readonly [string, string])[],
      at: { readonly sentAt: number; readonly ranAt: number; readonly answeredAt: number },
    ) => void;
  } = {},
): TenantClaims {
  const pendingTtl = o.pendingTtlMs ?? 15_000;
  const decidedTtl = o.decidedTtlMs ?? 60_000;
  const keys = (tenantId: string) => {
    const base = `drover:${controlPlaneId}:quota:${tenantId}`;
    return [`${base}:p`, `${base}:d`, `${base}:x`] as const;
  };
  const keyTtl = 10 * Math.max(pendingTtl, decidedTtl);
  if (!scripted.has(redis)) {
    scripted.add(redis);
    redis.defineCommand("drClaim", { numberOfKeys: 3, lua: CLAIM });
    redis.defineCommand("drClaimConfirm", { numberOfKeys: 3, lua: CONFIRM });
    redis.defineCommand("drClaimRelease", { numberOfKeys: 3, lua: RELEASE });
    // The number of keys is the call's first argument (5 per run).
    redis.defineCommand("drClaimReserveMany", { lua: CLAIM_RESERVE_MANY });
    redis.defineCommand("drClaimReserveManyTimed", { lua: CLAIM_RESERVE_MANY_TIMED });
    redis.defineCommand("drClaimConfirmExtendMany", { lua: CONFIRM_EXTEND_MANY });
  }
  type Item = {
    readonly keys: readonly string[];
    readonly args: readonly (string | number)[];
    readonly tenantId?: string;
  };
  const many = (items: readonly Item[]) => [...items.flatMap((i) => i.keys), ...items.flatMap((i) => i.args)];
  // Calls made while one awaits its answer leave as one script run (script-batch.ts).
  const onBatch = o.onClaimBatch;
  const claimReserve = scriptBatcher(async (items: readonly Item[]) => {
    if (!onBatch) return redis.drClaimReserveMany(items.length * 5, ...many(items));
    const sentAt = Date.now();
    const out = await redis.drClaimReserveManyTimed(items.length * 5, ...many(items));
    const [sec, usec] = (out.pop() ?? [0, 0]).map(Number) as [number, number];
    onBatch(
      items.map((i) => [i.tenantId ?? "", String(i.args[0])] as const),
      { sentAt, ranAt: sec * 1000 + usec / 1000, answeredAt: Date.now() },
    );
    return out;
  });
  const confirmExtend = scriptBatcher(async (items: readonly Item[]) => {
    await redis.drClaimConfirmExtendMany(items.length * 5, ...many(items));
    return items.map(() => undefined);
  });
  return {
    async claim(tenantId, run, limit, folded, position, now) {
      const [ok, count] = await redis.drClaim(...keys(tenantId), run, limit, folded, position, now, pendingTtl, keyTtl);
      return { ok: Number(ok) === 1, count: Number(count) };
    },
    async claimAndReserve(tenantId, run, limit, folded, position, now, slot) {
      const [ok, count, reserved] = await claimReserve({
        tenantId,
        keys: [...keys(tenantId), ...reservationKeys(controlPlaneId, slot.runtimeInstanceId)],
        args: [run, limit, folded, position, now, pendingTtl, keyTtl, slot.slots, slot.ttlMs, slot.beatAt ?? -1],
      });
      return Number(ok) === 1
        ? { ok: true, count: Number(count), reserved: reserveOutcome(Number(reserved)) }
        : { ok: false, count: Number(count) };
    },
    async confirm(tenantId, run, seq, now) {
      await redis.drClaimConfirm(...keys(tenantId), run, seq, now + decidedTtl, keyTtl);
    },
    async confirmAndExtend(tenantId, run, seq, now, slot) {
      await confirmExtend({
        keys: [...keys(tenantId), ...reservationKeys(controlPlaneId, slot.runtimeInstanceId)],
        args: [
          run,
          seq,
          now + decidedTtl,
          keyTtl,
          slot.untilMs,
          slot.acceptedAt === undefined ? "" : String(slot.acceptedAt),
        ],
      });
    },
    async release(tenantId, run) {
      await redis.drClaimRelease(...keys(tenantId), run);
    },
  };
}
