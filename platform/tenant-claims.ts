import type { Redis, Result } from "ioredis";

/**
 * Tenant quota claims in Redis: what makes `maxConcurrentRuns` hold across admission replicas (issue
 * 16). Each replica counts a tenant's active runs from its own fold of the log; what it cannot see is
 * a placement another replica made that its fold has not reached yet. So a placement first claims a
 * place here (one hash per tenant: field = SharedRunId, value `p:<expiry>` while it is being placed,
 * `s:<seq>:<expiry>` once its decision is in the log at stream sequence `seq`), and the Lua script
 * admits it only if the caller's folded count plus the claims its fold cannot contain — placements
 * in progress, and decisions beyond the caller's folded sequence — stays under the limit. A claim
 * is hot state, like a slot reservation: it expires by itself (a replica that died mid-placement
 * leaks one place for `pendingTtlMs` at most), and the log stays the truth: once every replica's fold
 * holds a decision, its claim counts nowhere twice and ages out.
 */
const CLAIM = `
local key, run, limit, folded, position = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local now, ttl = tonumber(ARGV[5]), tonumber(ARGV[6])
local all = redis.call('HGETALL', key)
local extra = 0
local mine = false
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  local kind, a, b = string.match(v, '^(%a):([^:]+):?(.*)$')
  local exp = tonumber(kind == 's' and b or a)
  if exp <= now then redis.call('HDEL', key, f)
  elseif f == run then mine = true
  elseif kind == 'p' or tonumber(a) > position then extra = extra + 1 end
end
if mine then return {1, folded + extra} end
if folded + extra >= limit then return {0, folded + extra} end
redis.call('HSET', key, run, 'p:' .. (now + ttl))
redis.call('PEXPIRE', key, ttl * 10)
return {1, folded + extra}`;

declare module "ioredis" {
  interface RedisCommander<Context> {
    drClaim(
      key: string,
      run: string,
      limit: number,
      folded: number,
      position: number,
      now: number,
      ttl: number,
    ): Result<[number, number], Context>;
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
  /** The run's decision is in the log at `seq`: counted by every fold that reached it, by the claim until then. */
  confirm(tenantId: string, sharedRunId: string, seq: number, now: number): Promise<void>;
  /** The run was not placed after all. */
  release(tenantId: string, sharedRunId: string): Promise<void>;
}

const scripted = new WeakSet<Redis>();

export function redisTenantClaims(
  redis: Redis,
  controlPlaneId: string,
  o: { readonly pendingTtlMs?: number; readonly decidedTtlMs?: number } = {},
): TenantClaims {
  const pendingTtl = o.pendingTtlMs ?? 15_000;
  const decidedTtl = o.decidedTtlMs ?? 60_000;
  const key = (tenantId: string) => `drover:${controlPlaneId}:quota:${tenantId}`;
  if (!scripted.has(redis)) {
    scripted.add(redis);
    redis.defineCommand("drClaim", { numberOfKeys: 1, lua: CLAIM });
  }
  return {
    async claim(tenantId, run, limit, folded, position, now) {
      const [ok, count] = await redis.drClaim(key(tenantId), run, limit, folded, position, now, pendingTtl);
      return { ok: Number(ok) === 1, count: Number(count) };
    },
    async confirm(tenantId, run, seq, now) {
      await redis.hset(key(tenantId), run, `s:${seq}:${now + decidedTtl}`);
    },
    async release(tenantId, run) {
      await redis.hdel(key(tenantId), run);
    },
  };
}
