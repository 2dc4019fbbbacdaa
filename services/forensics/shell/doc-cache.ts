import type { Collection } from "mongodb";
import { byId, putIfNewer } from "./collections.ts";

type Doc = { readonly _id: string; readonly lastSeq: number };

/**
 * A write-through cache of the aggregate documents the projector folds. The projector is the only
 * writer of its database, so what it last wrote is what is stored: reading it back from FerretDB
 * on every event would double the round trips. Bounded: past `max` entries it starts over (a miss
 * only costs a read). `clear` on reset, so a rebuild never folds onto documents it dropped.
 */
export function docCache(max = 20_000) {
  let docs = new Map<string, Doc>();
  const key = (c: Collection<Doc>, id: string) => `${c.collectionName}/${id}`;
  return {
    async get<T extends Doc>(c: Collection<T>, id: string): Promise<T | undefined> {
      const k = key(c as unknown as Collection<Doc>, id);
      if (docs.has(k)) return docs.get(k) as T;
      const d = await byId(c, id);
      if (d) docs.set(k, d);
      return d;
    },
    /** Writes `next` unless it is `prev` (nothing changed), and remembers it. */
    async put<T extends Doc>(c: Collection<T>, prev: T | undefined, next: T): Promise<void> {
      if (next === prev) return;
      await putIfNewer(c, next);
      if (docs.size >= max) docs = new Map();
      docs.set(key(c as unknown as Collection<Doc>, next._id), next);
    },
    clear() { docs = new Map(); },
  };
}
export type DocCache = ReturnType<typeof docCache>;
