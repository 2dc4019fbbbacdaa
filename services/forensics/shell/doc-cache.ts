import type { Collection } from "mongodb";
import { byId, insertRows, putIfNewer } from "./collections.ts";

type Doc = { readonly _id: string; readonly lastSeq: number };
type Row = { readonly _id: string };

/**
 * A write-behind cache of what the projector writes. The projector is the only writer of its
 * database, so what it last wrote is what is stored: reading it back from FerretDB on every event
 * would double the round trips. Writes are held until `flush`, so a batch of events writes each
 * document once (its newest version) and inserts its rows in one call per collection: FerretDB
 * commits every write on its own, and that, not the fold, was the projector's cost. Bounded: past
 * `max` clean entries it starts over (a miss only costs a read; unflushed documents are never
 * dropped). `clear` on reset, and after a failed flush, so a retried batch re-reads what is stored
 * instead of trusting versions that never landed.
 */
export function docCache(max = 20_000) {
  let docs = new Map<string, Doc>();
  let dirty = new Map<string, { c: Collection<Doc>; doc: Doc }>();
  let rows = new Map<Collection<Row>, Map<string, Row>>();
  const key = (c: Collection<Doc>, id: string) => `${c.collectionName}/${id}`;
  return {
    async get<T extends Doc>(c: Collection<T>, id: string): Promise<T | undefined> {
      const k = key(c as unknown as Collection<Doc>, id);
      const held = dirty.get(k)?.doc ?? docs.get(k);
      if (held) return held as T;
      const d = await byId(c, id);
      if (d) docs.set(k, d);
      return d;
    },
    /** Holds `next` for the next flush unless it is `prev` (nothing changed). */
    put<T extends Doc>(c: Collection<T>, prev: T | undefined, next: T): void {
      if (next === prev) return;
      const k = key(c as unknown as Collection<Doc>, next._id);
      dirty.set(k, { c: c as unknown as Collection<Doc>, doc: next });
      if (docs.size >= max) docs = new Map();
      docs.set(k, next);
    },
    /** Holds a row for the next flush; of two rows with one key, the first wins (as an insert would). */
    insert<T extends Row>(c: Collection<T>, row: T): void {
      const held = rows.get(c as unknown as Collection<Row>) ?? new Map<string, Row>();
      rows.set(c as unknown as Collection<Row>, held);
      if (!held.has(row._id)) held.set(row._id, row);
    },
    /** Writes everything held: rows first (insert-once by key), then each document's newest version. */
    async flush(): Promise<void> {
      try {
        for (const [c, held] of rows) await insertRows(c, [...held.values()]);
        for (const { c, doc } of dirty.values()) await putIfNewer(c, doc);
        rows = new Map();
        dirty = new Map();
      } catch (e) {
        docs = new Map();
        dirty = new Map();
        rows = new Map();
        throw e;
      }
    },
    clear() {
      docs = new Map();
      dirty = new Map();
      rows = new Map();
    },
  };
}
export type DocCache = ReturnType<typeof docCache>;
