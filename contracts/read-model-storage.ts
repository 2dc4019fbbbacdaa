import { DroverError } from "./errors.ts";
import { READ_MODEL_SHAPE, type LedgerRow } from "./read-models.ts";

/*
 * How ledger rows and run / execution documents are stored (read-model shapes 5 and 4): the fields a
 * query filters on as fields, the rest as one JSON string, and back. Re-exported by read-models.ts.
 */

/**
 * Ledger rows as stored in `ledger` (read-model shape 5): a chunk of rows that share their tenant,
 * lane page and run key, written by one flush of the projector, with what a query filters on as
 * fields (`page`, `runKey`, `tenantId`) and the rows themselves as one JSON string. FerretDB v1
 * (SQLite) spends its CPU per stored document and field, not per byte: one row per document was
 * most of its CPU in W2 (services/forensics/README.md "Ledger chunks"). `_id` is the chunk's first
 * row's `_id` and its row count (`<stream>:<seq>:<tenant>/<n>`): a chunk's rows are the next `n` rows
 * of its page and run key from its first, so one `_id` always holds the same rows and an insert of
 * a taken `_id` is a duplicate. A replay after a crash may cut the same rows into other chunks, so
 * a row can be stored in two chunks: {@link ledgerRowsOf} readers drop repeats by the row's `_id`.
 */
export interface StoredLedgerChunk {
  readonly _id: string;
  readonly tenantId: string;
  readonly page: string;
  readonly runKey?: string;
  /** The rows without `tenantId`, `page` and `runKey`, in stream order, `JSON.stringify`d. */
  readonly rows: string;
}

/** The `_id` of the chunk of `rows` (the first row's and the count). Pure. */
export const ledgerChunkId = (rows: readonly LedgerRow[]): string => `${rows[0]!._id}/${rows.length}`;

/** Rows of one tenant, page and run key (in stream order) as one stored chunk. Pure. */
export function storedLedgerChunk(rows: readonly LedgerRow[]): StoredLedgerChunk {
  const { tenantId, page, runKey } = rows[0]!;
  const bare = rows.map(({ tenantId: _t, page: _p, runKey: _k, ...rest }) => rest);
  return {
    _id: ledgerChunkId(rows),
    tenantId,
    page,
    ...(runKey === undefined ? {} : { runKey }),
    rows: JSON.stringify(bare),
  };
}

/** The rows a stored chunk holds (the inverse of {@link storedLedgerChunk}). Pure. */
export function ledgerRowsOf(s: StoredLedgerChunk): LedgerRow[] {
  const { _id, tenantId, page, runKey, rows } = s;
  if (typeof rows !== "string") throw olderShape("ledger row", _id);
  const bare = JSON.parse(rows) as Omit<LedgerRow, "tenantId" | "page" | "runKey">[];
  return bare.map((r) => ({ ...r, tenantId, page, ...(runKey === undefined ? {} : { runKey }) }) as LedgerRow);
}

/**
 * The rows of `chunks` that belong to `tenantId`, each once (a replay may have stored a row in two
 * chunks), in stream order. Pure.
 */
export function ledgerRowsIn(chunks: readonly StoredLedgerChunk[], tenantId: string): LedgerRow[] {
  const seen = new Map<string, LedgerRow>();
  for (const c of chunks)
    if (c.tenantId === tenantId) for (const r of ledgerRowsOf(c)) if (!seen.has(r._id)) seen.set(r._id, r);
  return [...seen.values()].sort((a, b) => a.seq - b.seq);
}

/**
 * A run or execution document as stored (`runs`, `executions`, read-model shape 6): as versions,
 * each inserted once and never updated. A version's `_id` is `<key>@<lastSeq>` ({@link storedDocId}),
 * `key` (the document's own `_id`, indexed), `tenantId` (checked on every read) and `lastSeq` are
 * fields, the rest (`d`) one JSON string. A reader takes the newest of its key's versions
 * ({@link newestDoc}): a document has one version per projector flush that changed it (its
 * lifecycle events, never its steps), so a read is O(its versions). Why: FerretDB v1 runs each
 * update (a versioned upsert was) as a read, a filter and a write in a transaction of its own, about
 * ten times an inserted document's CPU (600 of each, 2026-12-05: 190 vs 20 ms), and these two
 * collections took most of the projector's updates. Nothing reads them but through {@link docOf}.
 */
export interface StoredDoc {
  readonly _id: string;
  readonly key: string;
  readonly tenantId: string;
  readonly lastSeq: number;
  /** The document's other fields, `JSON.stringify`d. */
  readonly d: string;
}

/** The `_id` of the version of document `key` at `lastSeq`: a version is a pure function of its events up to there. Pure. */
export const storedDocId = (key: string, lastSeq: number): string => `${key}@${lastSeq}`;

/** The document's version as stored. Pure. */
export function storedDoc(doc: {
  readonly _id: string;
  readonly tenantId: string;
  readonly lastSeq: number;
}): StoredDoc {
  const { _id, tenantId, lastSeq, ...d } = doc;
  return { _id: storedDocId(_id, lastSeq), key: _id, tenantId, lastSeq, d: JSON.stringify(d) };
}

/** The document a stored version holds (the inverse of {@link storedDoc}). Pure. */
export function docOf<T extends { readonly _id: string; readonly tenantId: string; readonly lastSeq: number }>(
  s: StoredDoc,
): T {
  if (typeof s.d !== "string" || typeof s.key !== "string") throw olderShape("document", s._id);
  return { _id: s.key, tenantId: s.tenantId, ...(JSON.parse(s.d) as object), lastSeq: s.lastSeq } as T;
}

/** The newest of a document's stored versions (undefined for none). Pure. */
export function newestDoc(versions: readonly StoredDoc[]): StoredDoc | undefined {
  let newest: StoredDoc | undefined;
  for (const v of versions) if (!newest || v.lastSeq > newest.lastSeq) newest = v;
  return newest;
}

/**
 * Throws `read-model-unavailable` for a document stored by an older shape (found by `_id`, no
 * `key`): a reader that found no version of a key checks this once, so a database not yet rebuilt
 * answers 503 rather than "not found".
 */
export function refuseOlderDoc(found: { readonly _id: string } | null | undefined): void {
  if (found) throw olderShape("document", found._id);
}

/**
 * A stored row or document of an older shape: code of the shape before wrote it, and the projector
 * (its build marker names the shape) rebuilds the collections at its start. Until then the read
 * models are not available (503, retryable), not broken (a 500).
 */
const olderShape = (what: string, id: string) =>
  new DroverError(
    "read-model-unavailable",
    `${what} ${id} is stored in an older read-model shape; the forensics projector rebuilds the read models (shape ${READ_MODEL_SHAPE}) at its start`,
  );
