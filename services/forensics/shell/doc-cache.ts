import type { Collection } from "mongodb";
import { byId, insertRows, putDocs } from "./collections.ts";

type Doc = { readonly _id: string; readonly lastSeq: number };
type Row = { readonly _id: string };

/**
 * A write-behind cache of what the projector writes. The projector is the only writer of its
 * database, so what it last wrote is what is stored: reading it back from FerretDB on every event
 * would double the round trips. Writes are held until `flush`, so a batch of events writes each
 * document once (its newest version), documents and rows in one call per collection: FerretDB
 * commits every write on its own, and that, not the fold, was the projector's cost. Bounded: past
 * `max` clean entries it starts over (a miss only costs a read; unflushed documents are never
 * dropped). `clear` after a failed flush, so a retried batch re-reads what is stored instead of
 * trusting versions that never landed. `startEmpty` when the collections were just dropped (a
 * rebuild): until the cache first starts over, it holds everything stored, so a miss is a document
 * that does not exist and costs no read (a rebuild creates every document once: each was a read).
 */
export function docCache(max = 20_000) {
  let docs = new Map<string, Doc>();
  // Each collection's held writes keep its typed collection in a closure, so no collection is widened.
  let dirty = new Map<
    string,
    { readonly held: Map<string, Doc>; readonly fresh: Set<string>; readonly write: () => Promise<unknown> }
  >();
  // Each collection's held rows (plain or grouped) behind its own `add`, written by its `write`.
  let rows = new Map<
    string,
    { readonly add: (key: string, item: unknown) => void; readonly write: () => Promise<unknown> }
  >();
  // True while `docs` and `dirty` hold every stored document (since `startEmpty`, nothing evicted).
  let complete = false;
  const key = (c: { readonly collectionName: string }, id: string) => `${c.collectionName}/${id}`;
  return {
    async get<T extends Doc>(c: Collection<T>, id: string): Promise<T | undefined> {
      const k = key(c, id);
      const held = dirty.get(c.collectionName)?.held.get(id) ?? docs.get(k);
      if (held) return held as T;
      if (complete) return undefined;
      const d = await byId(c, id);
      if (d) docs.set(k, d);
      return d;
    },
    /**
     * Holds `next` for the next flush unless it is `prev` (nothing changed). `prev` undefined (`get`
     * found nothing stored) makes it a fresh document, inserted rather than upserted.
     */
    put<T extends Doc>(c: Collection<T>, prev: T | undefined, next: T): void {
      if (next === prev) return;
      const k = key(c, next._id);
      let batch = dirty.get(c.collectionName);
      if (!batch) {
        const held = new Map<string, T>();
        const fresh = new Set<string>();
        const write = async () => {
          const all = [...held.values()];
          await putDocs(
            c,
            all.filter((d) => fresh.has(d._id)),
            all.filter((d) => !fresh.has(d._id)),
          );
        };
        batch = { held, fresh, write };
        dirty.set(c.collectionName, batch);
      }
      if (prev === undefined && !batch.held.has(next._id)) batch.fresh.add(next._id);
      batch.held.set(next._id, next);
      if (docs.size >= max) {
        docs = new Map();
        complete = false;
      }
      docs.set(k, next);
    },
    /** Holds a row for the next flush; of two rows with one key, the first wins (as an insert would). */
    insert<T extends Row>(c: Collection<T>, row: T): void {
      let batch = rows.get(c.collectionName);
      if (!batch) {
        const held = new Map<string, T>();
        const add = (id: string, r: unknown) => {
          if (!held.has(id)) held.set(id, r as T);
        };
        batch = { add, write: () => insertRows(c, [...held.values()]) };
        rows.set(c.collectionName, batch);
      }
      batch.add(row._id, row);
    },
    /**
     * Holds `item` for the next flush in the group `key` of `c`; at the flush each group is written as
     * one document, `toDoc(its items in the order held)`, inserted once by key like a row.
     */
    insertGrouped<R, T extends Row>(c: Collection<T>, key: string, item: R, toDoc: (items: R[]) => T): void {
      let batch = rows.get(c.collectionName);
      if (!batch) {
        const groups = new Map<string, R[]>();
        const add = (k: string, i: unknown) => {
          const items = groups.get(k);
          if (items) items.push(i as R);
          else groups.set(k, [i as R]);
        };
        batch = { add, write: () => insertRows(c, [...groups.values()].map(toDoc)) };
        rows.set(c.collectionName, batch);
      }
      batch.add(key, item);
    },
    /** Writes everything held: rows first (insert-once by key), then each document's newest version (fresh ones first). */
    async flush(): Promise<void> {
      try {
        for (const batch of rows.values()) await batch.write();
        for (const batch of dirty.values()) await batch.write();
        rows = new Map();
        dirty = new Map();
      } catch (e) {
        this.clear();
        throw e;
      }
    },
    clear() {
      docs = new Map();
      dirty = new Map();
      rows = new Map();
      complete = false;
    },
    /** The collections are empty now (just dropped): what this cache is told from here on is all there is. */
    startEmpty() {
      this.clear();
      complete = true;
    },
  };
}
export type DocCache = ReturnType<typeof docCache>;
