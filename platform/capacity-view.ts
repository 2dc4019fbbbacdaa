import type { Redis } from "ioredis";

/**
 * The hot capacity view in Redis: one hash per runtime (`d` = descriptor JSON, `seq` = last folded
 * stream sequence) plus an index set per control plane. Written only by the capacity projection,
 * read by admission and the API; rebuilt from JetStream at will, so losing it loses nothing.
 *
 * Several capacity replicas write it at once (issue 16), each folding the same streams at its own
 * pace, so a write carries the descriptor's version — the runtime-event sequence it folded, then
 * its latest heartbeat's stored time — and lands only if that is not older than the stored one
 * (one Lua script: compare and set). A replica behind never puts an older descriptor over a newer
 * one; the checkpoint only moves forward the same way.
 */
export type DescriptorVersion = readonly [eventSeq: number, beatAtMs: number];

export interface CapacityViewStore<D> {
  /** Stores `descriptor` unless the stored one has a newer `version`; whether it was stored. */
  put(runtimeInstanceId: string, descriptor: D, version?: DescriptorVersion): Promise<boolean>;
  get(runtimeInstanceId: string): Promise<D | undefined>;
  all(): Promise<D[]>;
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

/** KEYS: descriptor hash, index set; ARGV: JSON, event seq, beat ms, runtime id. */
const PUT_IF_NOT_OLDER = `
local s = tonumber(redis.call('HGET', KEYS[1], 'vs') or '-1')
local b = tonumber(redis.call('HGET', KEYS[1], 'vb') or '-1')
local ns, nb = tonumber(ARGV[2]), tonumber(ARGV[3])
if ns < s or (ns == s and nb < b) then return 0 end
redis.call('HSET', KEYS[1], 'd', ARGV[1], 'vs', ARGV[2], 'vb', ARGV[3])
redis.call('SADD', KEYS[2], ARGV[4])
return 1`;
const SET_IF_GREATER = `
local c = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > c then redis.call('SET', KEYS[1], ARGV[1]) end
return 1`;

export function redisCapacityView<D>(redis: Redis, controlPlaneId: string): CapacityViewStore<D> {
  const base = `drover:${controlPlaneId}:cap`;
  const rtKey = (id: string) => `${base}:rt:${id}`;
  const index = `${base}:index`;
  const cpKey = (name: string) => `${base}:checkpoint:${name}`;
  return {
    async put(id, d, version = [0, 0]) {
      const stored = await redis.eval(
        PUT_IF_NOT_OLDER,
        2,
        rtKey(id),
        index,
        JSON.stringify(d),
        version[0],
        version[1],
        id,
      );
      return stored === 1;
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
    async clear() {
      const ids = await redis.smembers(index);
      const names = await redis.keys(`${base}:checkpoint:*`);
      await redis.del(index, ...ids.map(rtKey), ...names);
    },
    async replaceAll(descriptors, checkpoint) {
      const keep = new Set(descriptors.map(([id]) => id));
      const stale = (await redis.smembers(index)).filter((id) => !keep.has(id)).map(rtKey);
      const names = (await redis.keys(`${base}:checkpoint:*`)).filter((k) => k !== cpKey(checkpoint.name));
      const tx = redis.multi();
      if (stale.length + names.length > 0) tx.del(...stale, ...names);
      tx.del(index);
      for (const [id, d, v = [0, 0]] of descriptors)
        tx.del(rtKey(id)).hset(rtKey(id), "d", JSON.stringify(d), "vs", v[0], "vb", v[1]).sadd(index, id);
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
