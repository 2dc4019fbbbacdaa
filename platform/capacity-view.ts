import type { Redis, Result } from "ioredis";

/**
 * The hot capacity view in Redis: one hash per runtime (`d` = descriptor JSON, `seq` = last folded
 * stream sequence) plus an index set per control plane. Written only by the capacity projection,
 * read by admission and the API; rebuilt from JetStream at will, so losing it loses nothing.
 *
 * Several capacity replicas write it at once (issue 16), each folding the same streams at its own
 * pace, so a write carries the descriptor's version — the runtime-event sequence it folded, then
 * its latest heartbeat's stored time, then that beat's number (two beats can be stored in the same
 * millisecond: a replica then put beat 52 over 53) — and lands only if that is not older than the stored one
 * (one Lua script: compare and set). A replica behind never puts an older descriptor over a newer
 * one; the checkpoint only moves forward the same way.
 */
export type DescriptorVersion = readonly [eventSeq: number, beatAtMs: number, beat?: number];

export interface CapacityViewStore<D> {
  /**
   * Stores `descriptor` unless the stored one has a newer `version`; whether it was stored. With
   * `announce`, a stored descriptor is also announced to every `watch` (after it is visible to reads).
   */
  put(runtimeInstanceId: string, descriptor: D, version?: DescriptorVersion, announce?: boolean): Promise<boolean>;
  /**
   * Calls `onChange` with the runtime's id whenever its descriptor is put with `announce` (from now on,
   * by any writer): a hint to read the view again, never its content. Resolves once subscribed; `close` ends it.
   */
  watch?(onChange: (runtimeInstanceId: string) => void): Promise<{ close(): Promise<void> }>;
  get(runtimeInstanceId: string): Promise<D | undefined>;
  /** Every descriptor, retired ones included (ordered by RuntimeInstanceId). */
  all(): Promise<D[]>;
  /**
   * The descriptors of runtimes not retired, in one round trip (ordered by RuntimeInstanceId): what
   * admission reads every pass. A retired runtime never takes work again, and runtimes ever created
   * only grow; `get` still reads a retired one.
   */
  live(): Promise<D[]>;
  /** Drops the whole view (before a rebuild from sequence 1). */
  clear(): Promise<void>;
  /**
   * Replaces the whole view in one MULTI/EXEC (readers see the old view or the new one, never an empty
   * or half one): exactly `descriptors`, and the checkpoint `name` at `seq`, every other checkpoint gone.
   */
  replaceAll(
    descriptors: ReadonlyArray<readonly [runtimeInstanceId: string, descriptor: D, version?: DescriptorVersion]>,
    checkpoint: { name: string; seq: number },
  ): Promise<void>;
  getCheckpoint(name: string): Promise<number>;
  /** Moves the checkpoint to `seq` unless it is already further. */
  setCheckpoint(name: string, seq: number): Promise<void>;
}

/**
 * KEYS: descriptor hash, index set, live set; ARGV: JSON, event seq, beat ms, runtime id, '1' if
 * retired, beat number, the channel to announce a stored descriptor on ('' for none).
 */
const PUT_IF_NOT_OLDER = `
local s = tonumber(redis.call('HGET', KEYS[1], 'vs') or '-1')
local b = tonumber(redis.call('HGET', KEYS[1], 'vb') or '-1')
local n = tonumber(redis.call('HGET', KEYS[1], 'vn') or '-1')
local ns, nb, nn = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[6])
if ns < s or (ns == s and (nb < b or (nb == b and nn < n))) then return 0 end
redis.call('HSET', KEYS[1], 'd', ARGV[1], 'vs', ARGV[2], 'vb', ARGV[3], 'vn', ARGV[6])
redis.call('SADD', KEYS[2], ARGV[4])
if ARGV[5] == '1' then redis.call('SREM', KEYS[3], ARGV[4]) else redis.call('SADD', KEYS[3], ARGV[4]) end
if ARGV[7] ~= '' then redis.call('PUBLISH', ARGV[7], ARGV[4]) end
return 1`;
/**
 * `live_descriptors(live set, index set, descriptor hashes' key prefix)` → ids, descriptors: every
 * live descriptor, by id. With no live set (empty, or a view written before it existed) the index is
 * read and retired descriptors are left out here: the same answer, only slower. Also in
 * platform/reservations.ts' read of the live view with its reservation counts.
 */
export const LIVE_FN = `
local function live_descriptors(liveKey, indexKey, prefix)
  local ids = redis.call('SMEMBERS', liveKey)
  local filter = #ids == 0
  if filter then ids = redis.call('SMEMBERS', indexKey) end
  table.sort(ids)
  local outIds, outDs = {}, {}
  for _, id in ipairs(ids) do
    local d = redis.call('HGET', prefix .. id, 'd')
    if d and not (filter and cjson.decode(d).status == 'retired') then
      outIds[#outIds + 1] = id
      outDs[#outDs + 1] = d
    end
  end
  return outIds, outDs
end`;
/** KEYS: live set, index set; ARGV: the descriptor hashes' key prefix. */
const LIVE = `${LIVE_FN}
local _, ds = live_descriptors(KEYS[1], KEYS[2], ARGV[1])
return ds`;

/** The view's keys for a control plane: the live set, the index set and the descriptor hashes' prefix. */
export const capacityViewKeys = (controlPlaneId: string) => {
  const base = `drover:${controlPlaneId}:cap`;
  return { live: `${base}:live`, index: `${base}:index`, descriptorPrefix: `${base}:rt:` } as const;
};

declare module "ioredis" {
  interface RedisCommander<Context> {
    drCapLive(live: string, index: string, prefix: string): Result<string[], Context>;
  }
}
const scripted = new WeakSet<Redis>();
const SET_IF_GREATER = `
local c = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > c then redis.call('SET', KEYS[1], ARGV[1]) end
return 1`;

/** A descriptor of a retired runtime (the capacity descriptor's lifecycle; other shapes are never retired). */
const isRetired = (d: unknown): boolean => (d as { status?: unknown } | null)?.status === "retired";

export function redisCapacityView<D>(redis: Redis, controlPlaneId: string): CapacityViewStore<D> {
  const base = `drover:${controlPlaneId}:cap`;
  const { live, index, descriptorPrefix } = capacityViewKeys(controlPlaneId);
  const rtKey = (id: string) => `${descriptorPrefix}${id}`;
  if (!scripted.has(redis)) {
    scripted.add(redis);
    redis.defineCommand("drCapLive", { numberOfKeys: 2, lua: LIVE });
  }
  const cpKey = (name: string) => `${base}:checkpoint:${name}`;
  // Pub/sub channels are not keys (one namespace for every database): the control plane names it.
  const channel = `${base}:changed`;
  return {
    async put(id, d, version = [0, 0], announce = false) {
      const stored = await redis.eval(
        PUT_IF_NOT_OLDER,
        3,
        rtKey(id),
        index,
        live,
        JSON.stringify(d),
        version[0],
        version[1],
        id,
        isRetired(d) ? "1" : "0",
        version[2] ?? 0,
        announce ? channel : "",
      );
      return stored === 1;
    },
    async watch(onChange) {
      // A subscribed connection takes no other command: its own, closed with the watch.
      const sub = redis.duplicate();
      sub.on("message", (ch: string, runtimeInstanceId: string) => {
        if (ch === channel) onChange(runtimeInstanceId);
      });
      sub.on("error", () => undefined); // reconnects on its own; a missed hint costs one tick
      await sub.subscribe(channel);
      return {
        close: async () => {
          sub.disconnect();
        },
      };
    },
    async get(id) {
      const raw = await redis.hget(rtKey(id), "d");
      return raw ? (JSON.parse(raw) as D) : undefined;
    },
    async all() {
      const ids = (await redis.smembers(index)).sort();
      if (ids.length === 0) return [];
      const pipe = redis.pipeline();
      for (const id of ids) pipe.hget(rtKey(id), "d");
      const rows = (await pipe.exec()) ?? [];
      return rows.flatMap(([err, raw]) => (err || typeof raw !== "string" ? [] : [JSON.parse(raw) as D]));
    },
    async live() {
      const rows = await redis.drCapLive(live, index, descriptorPrefix);
      return rows.map((raw) => JSON.parse(raw) as D);
    },
    async clear() {
      const ids = await redis.smembers(index);
      const names = await redis.keys(`${base}:checkpoint:*`);
      await redis.del(index, live, ...ids.map(rtKey), ...names);
    },
    async replaceAll(descriptors, checkpoint) {
      const keep = new Set(descriptors.map(([id]) => id));
      const stale = (await redis.smembers(index)).filter((id) => !keep.has(id)).map(rtKey);
      const names = (await redis.keys(`${base}:checkpoint:*`)).filter((k) => k !== cpKey(checkpoint.name));
      const tx = redis.multi();
      if (stale.length + names.length > 0) tx.del(...stale, ...names);
      tx.del(index, live);
      for (const [id, d, v = [0, 0]] of descriptors) {
        tx.del(rtKey(id))
          .hset(rtKey(id), "d", JSON.stringify(d), "vs", v[0], "vb", v[1], "vn", v[2] ?? 0)
          .sadd(index, id);
        if (!isRetired(d)) tx.sadd(live, id);
      }
      await tx.set(cpKey(checkpoint.name), String(checkpoint.seq)).exec();
    },
    async getCheckpoint(name) {
      return Number((await redis.get(cpKey(name))) ?? 0);
    },
    async setCheckpoint(name, seq) {
      await redis.eval(SET_IF_GREATER, 1, cpKey(name), seq);
    },
  };
}
