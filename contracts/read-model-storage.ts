import { DroverError } from "./errors.ts";
import { READ_MODEL_SHAPE, type LedgerRow } from "./read-models.ts";

/*
 * How ledger rows and run / execution documents are stored (read-model shapes 3 and 4): the fields a
 * query filters on as fields, the rest as one JSON string, and back. Re-exported by read-models.ts.
 */

/**
 * A ledger row as stored in `ledger`: what a query or a test filters on as fields (`_id`, `tenantId`,
 * `seq`, `page`, `runKey`) and `summary`, the rest (`e`) as one JSON string. FerretDB v1 (SQLite)
 * spends its time per stored field (it keeps each field's type beside its value), not per row: 3,400
 * W2-like rows cost it ~300 ms of CPU as 22 fields each, ~120 ms in this shape (services/forensics/README.md).
 * Nothing reads a row's other fields but through {@link ledgerRowOf}.
 */
export interface StoredLedgerRow {
  readonly _id: string;
  readonly tenantId: string;
  readonly seq: number;
  readonly page: string;
  readonly runKey?: string;
  readonly summary: string;
  /** The row's other fields, `JSON.stringify`d. */
  readonly e: string;
}

/** The row as stored. Pure. */
export function storedLedgerRow(r: LedgerRow): StoredLedgerRow {
  const { _id, tenantId, seq, page, runKey, summary, ...e } = r;
  return { _id, tenantId, seq, page, ...(runKey === undefined ? {} : { runKey }), summary, e: JSON.stringify(e) };
}

/** The row a stored one holds (the inverse of {@link storedLedgerRow}). Pure. */
export function ledgerRowOf(s: StoredLedgerRow): LedgerRow {
  const { _id, tenantId, seq, page, runKey, summary, e } = s;
  if (typeof e !== "string") throw olderShape("ledger row", _id);
  const rest = JSON.parse(e) as Omit<LedgerRow, "_id" | "tenantId" | "seq" | "page" | "runKey" | "summary">;
  return { _id, tenantId, seq, ...rest, summary, page, ...(runKey === undefined ? {} : { runKey }) };
}

/**
 * A run or execution document as stored (`runs`, `executions`: read by `_id` only): `_id`, `tenantId`
 * (checked on every read) and `lastSeq` (the version every write is conditional on) as fields, the
 * rest (`d`) as one JSON string. FerretDB v1 runs each versioned upsert as a read, a filter and a
 * write of the whole document, field by field (see {@link StoredLedgerRow}); these two collections
 * take most of the projector's upserts. Nothing reads them but through {@link docOf}.
 */
export interface StoredDoc {
  readonly _id: string;
  readonly tenantId: string;
  readonly lastSeq: number;
  /** The document's other fields, `JSON.stringify`d. */
  readonly d: string;
}

/** The document as stored. Pure. */
export function storedDoc(doc: {
  readonly _id: string;
  readonly tenantId: string;
  readonly lastSeq: number;
}): StoredDoc {
  const { _id, tenantId, lastSeq, ...d } = doc;
  return { _id, tenantId, lastSeq, d: JSON.stringify(d) };
}

/** The document a stored one holds (the inverse of {@link storedDoc}). Pure. */
export function docOf<T extends { readonly _id: string; readonly tenantId: string; readonly lastSeq: number }>(
  s: StoredDoc,
): T {
  if (typeof s.d !== "string") throw olderShape("document", s._id);
  return { _id: s._id, tenantId: s.tenantId, ...(JSON.parse(s.d) as object), lastSeq: s.lastSeq } as T;
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
