import type { Redis } from "ioredis";

/**
 * The hot capacity view in Redis: one hash per runtime (`d` = descriptor JSON, `seq` = last folded
 * stream sequence) plus an index set per control plane. Written only by the capacity projection,
 * read by admission and the API; rebuilt from JetStream at will, so losing it loses nothing.
 */
export interface CapacityViewStore<D> {
  put(runtimeInstanceId: string, descriptor: D): Promise<void>;
  get(runtimeInstanceId: string): Promise<D | undefined>;
  all(): Promise<D[]>;
  /** Drops the whole view (before a rebuild from sequence 1). */
  clear(): Promise<void>;
  /**
   * Replaces the whole view in one MULTI/EXEC (readers see the old view or the new one, never an empty
   * or half one): exactly `descriptors`, and the checkpoint `name` at `seq`, every other checkpoint gone.
   */
  replaceAll(
    descriptors: ReadonlyArray<readonly [runtimeInstanceId: string, descriptor: D]>,
    checkpoint: { name: string; seq: number },
  ): Promise<void>;
  getCheckpoint(name: string): Promise<number>;
  setCheckpoint(name: string, seq: number): Promise<void>;
}

export function redisCapacityView<D>(redis: Redis, controlPlaneId: string): CapacityViewStore<D> {
  const base = `drover:${controlPlaneId}:cap`;
  const rtKey = (id: string) => `${base}:rt:${id}`;
  const index = `${base}:index`;
  const cpKey = (name: string) => `${base}:checkpoint:${name}`;
  return {
    async put(id, d) {
      await redis.multi().hset(rtKey(id), "d", JSON.stringify(d)).sadd(index, id).exec();
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
      for (const [id, d] of descriptors) tx.del(rtKey(id)).hset(rtKey(id), "d", JSON.stringify(d)).sadd(index, id);
      await tx.set(cpKey(checkpoint.name), String(checkpoint.seq)).exec();
    },
    async getCheckpoint(name) {
      return Number((await redis.get(cpKey(name))) ?? 0);
    },
    async setCheckpoint(name, seq) {
      await redis.set(cpKey(name), String(seq));
    },
  };
}
