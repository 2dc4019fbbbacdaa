import type { Collection, Db, Filter, IndexSpecification, OptionalUnlessRequiredId } from "mongodb";
import { mayHoldNul, storable } from "../domain/fact.ts";
import {
  CHECKPOINT_COLLECTION,
  docOf,
  newestDoc,
  storedDoc,
  READ_MODEL_COLLECTIONS,
  RETIRED_READ_MODEL_COLLECTIONS,
  type ExecutionDoc,
  type ForensicsRow,
  type IncidentDoc,
  type IncidentItem,
  type LedgerCountDoc,
  type LedgerPageDoc,
  type StoredDoc,
  type StoredLedgerChunk,
  type RunCountDoc,
  type RunDoc,
  type RunPageDoc,
  type RuntimeDoc,
} from "../../../contracts/read-models.ts";

/** The checkpoint document: the stream sequence the projection has applied up to. */
export interface CheckpointDoc {
  readonly _id: string;
  readonly seq: number;
  readonly state?: "building" | "built";
  readonly token?: string;
}

/**
 * The collections whose documents are stored encoded as versions ({@link StoredDoc}:
 * contracts/read-models.ts): typed here as the documents they hold, written by {@link insertVersions}
 * (which {@link putManyIfNewer} / {@link insertNewOrPut} turn to for them) and read by {@link byId},
 * which encode them and decode the newest version.
 */
const ENCODED: ReadonlySet<string> = new Set(["runs", "executions"]);
const isVersioned = (c: { readonly collectionName: string }): boolean => ENCODED.has(c.collectionName);

/**
 * `doc` as written to `c`: sanitised (`storable`), encoded where `c` is. An encoded document is made
 * storable before it is encoded when its JSON may hold a NUL (inside the JSON string a NUL is an
 * escape a read turns back into a NUL), else only its own few fields are checked: no walk of the document.
 */
function toStored<T extends { readonly _id: string }>(c: Collection<T>, doc: T): T {
  if (!ENCODED.has(c.collectionName)) return storable(doc);
  const d = doc as unknown as Parameters<typeof storedDoc>[0];
  const encoded = storedDoc(d);
  return storable(mayHoldNul(encoded.d) ? storedDoc(storable(d)) : encoded) as unknown as T;
}

/** The projector's collections in one database. */
export interface ReadModelDb {
  readonly db: Db;
  readonly runs: Collection<RunDoc>;
  readonly executions: Collection<ExecutionDoc>;
  readonly incidents: Collection<IncidentDoc>;
  readonly incidentItems: Collection<IncidentItem>;
  readonly forensics: Collection<ForensicsRow>;
  readonly ledger: Collection<StoredLedgerChunk>;
  readonly runtimes: Collection<RuntimeDoc>;
  readonly runCounts: Collection<RunCountDoc>;
  readonly runPages: Collection<RunPageDoc>;
  readonly ledgerCounts: Collection<LedgerCountDoc>;
  readonly ledgerPages: Collection<LedgerPageDoc>;
  readonly checkpoints: Collection<CheckpointDoc>;
}

export function readModelDb(db: Db): ReadModelDb {
  return {
    db,
    runs: db.collection("runs"),
    executions: db.collection("executions"),
    incidents: db.collection("incidents"),
    incidentItems: db.collection("incident_items"),
    forensics: db.collection("forensics"),
    ledger: db.collection("ledger"),
    runtimes: db.collection("runtimes"),
    runCounts: db.collection("run_counts"),
    runPages: db.collection("run_pages"),
    ledgerCounts: db.collection("ledger_counts"),
    ledgerPages: db.collection("ledger_pages"),
    checkpoints: db.collection(CHECKPOINT_COLLECTION),
  };
}

// Every API query names a tenant first (the tenant boundary). FerretDB v1 (SQLite, our patches)
// pushes top-level equalities down, but SQLite searches an index by its first column only (`explain`:
// `{tenantId, sharedRunId}` is a search on tenantId alone, whatever index it picks), so an index per
// leading field: a second compound index with the same first column is never searched on more and
// only costs its upkeep on every insert (W2: ledger rows are most of what FerretDB writes).
// `runs` and `executions` are read by their versions' `key` only (services/api/shell/read-models.ts).
const INDEXES: Readonly<Partial<Record<(typeof READ_MODEL_COLLECTIONS)[number], readonly IndexSpecification[]>>> = {
  runs: [{ key: 1 }],
  executions: [{ key: 1 }],
  incidents: [{ tenantIds: 1 }, { runtimeInstanceId: 1 }],
  incident_items: [{ incidentId: 1, tenantId: 1 }],
  forensics: [
    { tenantId: 1, seq: 1 },
    { incidentId: 1, seq: 1 },
  ],
  // A ledger page is `{page}` and a run's rows `{runKey}` (contracts/read-models.ts): no query reads a tenant's rows.
  ledger: [{ page: 1 }, { runKey: 1 }],
};

const indexName = (key: IndexSpecification): string =>
  Object.entries(key as Record<string, number>)
    .map(([k, v]) => `${k}_${v}`)
    .join("_");

/**
 * Creates the query indexes (idempotent: an existing index with the same keys is left alone) and
 * drops the collections' other indexes but `_id` (ones an earlier version created: each costs every
 * insert its upkeep).
 */
export async function ensureIndexes(m: ReadModelDb): Promise<void> {
  const existing = new Set((await m.db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name));
  for (const [name, specs] of Object.entries(INDEXES)) {
    const c = m.db.collection(name);
    for (const key of specs ?? []) await c.createIndex(key);
    // listIndexes of a collection that does not exist fails (NamespaceNotFound); it has none to drop.
    if (!existing.has(name) && (specs ?? []).length === 0) continue;
    const wanted = new Set(["_id_", ...(specs ?? []).map(indexName)]);
    for (const ix of await c.listIndexes().toArray())
      if (!wanted.has(ix.name as string)) await c.dropIndex(ix.name as string);
  }
}

/** Drops every read-model collection, retired ones too (not the checkpoints): the first half of a rebuild. */
export async function dropReadModels(m: ReadModelDb): Promise<void> {
  const existing = new Set((await m.db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name));
  for (const name of [...READ_MODEL_COLLECTIONS, ...RETIRED_READ_MODEL_COLLECTIONS])
    if (existing.has(name)) await m.db.collection(name).drop();
}

const isDuplicateKey = (e: unknown): boolean => (e as { code?: unknown }).code === 11000;

/**
 * Writes `doc` unless its stored version is already at `doc.lastSeq` or later. FerretDB has no
 * transactions, so this is the whole concurrency story: the filter only matches an older version,
 * and when the document is newer the upsert's insert collides on `_id` (11000), which means
 * "already applied" — re-applying an event is harmless.
 */
export async function putIfNewer<T extends { readonly _id: string; readonly lastSeq: number }>(
  c: Collection<T>,
  doc: T,
): Promise<void> {
  if (isVersioned(c)) return insertVersions(c, [doc]);
  try {
    await c.replaceOne({ _id: doc._id, lastSeq: { $lt: doc.lastSeq } } as Filter<T>, toStored(c, doc), {
      upsert: true,
    });
  } catch (e) {
    if (!isDuplicateKey(e)) throw e;
  }
}

/**
 * `putIfNewer` for each of `docs`, in ordered bulkWrites: one call per 64 documents unless a document is
 * already at a newer version (a re-applied batch). An ordered batch stops at that duplicate key and
 * names its index; the documents before it are written, so the rest goes in the next call. Not one
 * unordered bulkWrite: FerretDB v1.24 stops an unordered update batch at its first duplicate key
 * too, without saying which documents it skipped, so later documents were silently not written
 * (`test/int/forensics-put-many.int.test.ts`). One call per document was FerretDB's main cost in W2
 * (bench/workloads: 50 concurrent runs touch ~100 run and execution documents per batch).
 */
export async function putManyIfNewer<T extends { readonly _id: string; readonly lastSeq: number }>(
  c: Collection<T>,
  docs: readonly T[],
): Promise<void> {
  if (isVersioned(c)) return insertVersions(c, docs);
  for (let at = 0; at < docs.length; at += UPDATES_PER_CALL)
    await putChunkIfNewer(c, docs.slice(at, at + UPDATES_PER_CALL));
}

/**
 * Most updates in one call. FerretDB v1.24 (SQLite) never answers an update command of 100 or more
 * updates: it stops before the 100th (seen with 100 `replaceOne`s, with or without upsert or a
 * version filter, and with `$set`; 99 pass), so a batch that touched 100 documents of one collection
 * hung the projector for good (`test/int/forensics-put-many.int.test.ts`).
 */
const UPDATES_PER_CALL = 64;

async function putChunkIfNewer<T extends { readonly _id: string; readonly lastSeq: number }>(
  c: Collection<T>,
  docs: readonly T[],
): Promise<void> {
  for (let rest = docs; rest.length > 0;) {
    if (rest.length === 1) return putIfNewer(c, rest[0]!);
    try {
      await c.bulkWrite(
        rest.map((doc) => ({
          replaceOne: {
            filter: { _id: doc._id, lastSeq: { $lt: doc.lastSeq } } as Filter<T>,
            replacement: toStored(c, doc),
            upsert: true,
          },
        })),
        { ordered: true },
      );
      return;
    } catch (e) {
      const stoppedAt = duplicateKeyIndex(e);
      if (stoppedAt === undefined) throw e;
      rest = rest.slice(stoppedAt + 1);
    }
  }
}

/**
 * Writes documents the projector knows are not stored yet (its cache found none): one unordered
 * insert instead of one versioned upsert each, which FerretDB runs as a read, a filter and a write
 * in a transaction of its own (W2: updates were two thirds of FerretDB's CPU, a fresh run's and its
 * execution's first versions half of them). A document whose key turns out taken (the cache was
 * wrong, or a batch retried after a partial write) goes through {@link putManyIfNewer}, so the
 * newer version still wins; any other failure throws.
 */
export async function insertNewOrPut<T extends { readonly _id: string; readonly lastSeq: number }>(
  c: Collection<T>,
  docs: readonly T[],
): Promise<void> {
  if (docs.length === 0) return;
  if (isVersioned(c)) return insertVersions(c, docs);
  try {
    await c.insertMany(
      docs.map((d) => toStored(c, d) as OptionalUnlessRequiredId<T>),
      { ordered: false },
    );
  } catch (e) {
    const taken = duplicateKeyIndexes(e);
    if (taken === undefined) throw e;
    await putManyIfNewer(
      c,
      taken.map((i) => docs[i]!),
    );
  }
}

/**
 * Writes one flush's documents of `c`: `fresh` ones (the projector found none stored) by
 * {@link insertNewOrPut}, the others by {@link putManyIfNewer}. A versioned collection's documents
 * are all new versions whichever they are, so they go in one insert: two calls per flush for `runs`
 * and two for `executions` were four FerretDB commands (each its own commit) where two do.
 */
export async function putDocs<T extends { readonly _id: string; readonly lastSeq: number }>(
  c: Collection<T>,
  fresh: readonly T[],
  others: readonly T[],
): Promise<void> {
  if (isVersioned(c)) return insertVersions(c, [...fresh, ...others]);
  await insertNewOrPut(c, fresh);
  await putManyIfNewer(c, others);
}

/** The indexes of an unordered insert's failed documents when every failure is a duplicate key; else undefined. */
function duplicateKeyIndexes(e: unknown): number[] | undefined {
  const w = (e as { writeErrors?: unknown }).writeErrors;
  const errors = (Array.isArray(w) ? w : w ? [w] : []) as { code?: unknown; index?: unknown }[];
  if (errors.length === 0 || !errors.every((x) => x.code === 11000 && typeof x.index === "number")) return undefined;
  return errors.map((x) => x.index as number).sort((a, b) => a - b);
}

/** The index an ordered bulkWrite stopped at when its one error is a duplicate key; else undefined. */
function duplicateKeyIndex(e: unknown): number | undefined {
  const w = (e as { writeErrors?: unknown }).writeErrors;
  const errors = (Array.isArray(w) ? w : w ? [w] : []) as { code?: unknown; index?: unknown }[];
  const only = errors.length === 1 ? errors[0]! : undefined;
  return only?.code === 11000 && typeof only.index === "number" ? only.index : undefined;
}

const onlyDuplicateKeys = (e: unknown): boolean => {
  const w = (e as { writeErrors?: unknown }).writeErrors;
  const errors = (Array.isArray(w) ? w : w ? [w] : []) as { code?: unknown }[];
  return errors.length > 0 && errors.every((x) => x.code === 11000);
};

/**
 * Inserts rows keyed by stream sequence in one call, unordered: a row whose key exists is the same
 * row written before (a row is a pure function of its event) and is skipped; any other failure
 * throws. FerretDB tries the whole batch in one transaction and, only if that fails, row by row.
 */
export async function insertRows<T extends { readonly _id: string }>(
  c: Collection<T>,
  rows: readonly T[],
): Promise<void> {
  if (rows.length === 0) return;
  try {
    await c.insertMany(
      rows.map((r) => storable(r) as OptionalUnlessRequiredId<T>),
      { ordered: false },
    );
  } catch (e) {
    if (!onlyDuplicateKeys(e)) throw e;
  }
}

/**
 * Writes each document of a versioned collection (`runs`, `executions`) as a new version, in one
 * unordered insert: a version is keyed by its document and `lastSeq` and is a pure function of the
 * events up to there, so a taken `_id` is the same version written before (a retried batch, a replay
 * after a crash) and is skipped; readers take the newest version. No update at all: FerretDB ran
 * each versioned upsert as a transaction of its own (contracts/read-models.ts `StoredDoc`).
 */
export async function insertVersions<T extends { readonly _id: string; readonly lastSeq: number }>(
  c: Collection<T>,
  docs: readonly T[],
): Promise<void> {
  await insertRows(
    c,
    docs.map((d) => toStored(c, d)),
  );
}

/**
 * Reads one document by `_id` (of a versioned collection: the newest version of that key, decoded)
 * without Mongo's own `_id` typing getting in the way.
 */
export async function byId<T extends { readonly _id: string }>(c: Collection<T>, id: string): Promise<T | undefined> {
  if (isVersioned(c)) {
    const newest = newestDoc((await c.find({ key: id } as unknown as Filter<T>).toArray()) as unknown as StoredDoc[]);
    return newest ? (docOf(newest) as unknown as T) : undefined;
  }
  return ((await c.findOne({ _id: id } as Filter<T>)) as T | null) ?? undefined;
}
