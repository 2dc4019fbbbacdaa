import { inspect, isDeepStrictEqual } from "node:util";
import type { Db } from "mongodb";
import {
  docOf,
  ledgerRowsOf,
  newestDoc,
  READ_MODEL_COLLECTIONS,
  type LedgerRow,
  type StoredDoc,
  type StoredLedgerChunk,
} from "../../contracts/read-models.ts";

/**
 * A read-model collection's documents as readers see them: run and execution documents (stored as
 * versions, contracts/read-models.ts `StoredDoc`) as the newest version of each, decoded, by `_id`;
 * any other collection as stored. Which older versions exist depends on how the projector's batches
 * fell (live, resumed, rebuilt), not on the stream, so "the same read models" compares these.
 */
export function asRead(collection: string, docs: readonly unknown[]): unknown[] {
  if (collection !== "runs" && collection !== "executions") return [...docs];
  const byKey = new Map<string, StoredDoc[]>();
  for (const d of docs as StoredDoc[]) byKey.set(d.key, [...(byKey.get(d.key) ?? []), d]);
  return [...byKey.keys()].sort().map((k) => docOf(newestDoc(byKey.get(k)!)!));
}

/**
 * Every read-model collection of `db` as readers see it, sorted by `_id`: run and execution
 * documents through {@link asRead}, ledger rows each once whatever chunks a batch cut them in
 * (`ledgerRowsOf`; a row stored in two chunks as two different copies throws: readers would answer
 * with whichever they met first), any other collection as stored: what "the same read models" means. Versions
 * and chunks depend on where the projector's batches fell (live, resumed, rebuilt), not on the stream.
 */
export async function dumpReadModels(db: Db): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const c of READ_MODEL_COLLECTIONS) out[c] = asRead(c, await db.collection(c).find().sort({ _id: 1 }).toArray());
  const rows = new Map<string, { row: LedgerRow; chunk: string }>();
  for (const chunk of out.ledger as StoredLedgerChunk[])
    for (const row of ledgerRowsOf(chunk)) {
      const seen = rows.get(row._id);
      // Readers keep whichever copy they meet first: two different copies would be two answers.
      if (seen && !isDeepStrictEqual(seen.row, row))
        throw new Error(
          `ledger row ${row._id} is stored differently in chunks ${seen.chunk} and ${chunk._id}: ${inspect(seen.row, { depth: 8, breakLength: Infinity })} vs ${inspect(row, { depth: 8, breakLength: Infinity })}`,
        );
      if (!seen) rows.set(row._id, { row, chunk: chunk._id });
    }
  out.ledger = [...rows.values()].map((r) => r.row).sort((a, b) => (a._id < b._id ? -1 : 1));
  return out;
}

/**
 * Where two dumps ({@link dumpReadModels}) of the collection `collection` first differ, as text for a
 * failure message: the index, `_id` and both documents (`util.inspect`, which shows what a test
 * runner's diff hides: the runner truncates a long collection's print, so a difference past the
 * first thousands of rows read "no visual difference"), the fields that differ, and for a ledger row
 * the stored chunks holding it in each database. Undefined when the dumps are deep-strict equal.
 */
export async function describeDifference(
  collection: string,
  a: { readonly db: Db; readonly docs: readonly unknown[] },
  b: { readonly db: Db; readonly docs: readonly unknown[] },
): Promise<string | undefined> {
  const n = Math.max(a.docs.length, b.docs.length);
  let i = 0;
  while (i < n && isDeepStrictEqual(a.docs[i], b.docs[i])) i++;
  if (i === n) return undefined;
  const [x, y] = [a.docs[i] as Record<string, unknown> | undefined, b.docs[i] as Record<string, unknown> | undefined];
  const keys = [...new Set([...Object.keys(x ?? {}), ...Object.keys(y ?? {})])];
  const fields = keys.filter((k) => !isDeepStrictEqual(x?.[k], y?.[k]));
  const lines = [
    `first difference at index ${i} of ${a.docs.length} vs ${b.docs.length}, _id ${String(x?._id)} vs ${String(y?._id)}`,
    `fields differing: ${fields.join(", ")}`,
    `actual:   ${inspect(x, { depth: 8, breakLength: Infinity })}`,
    `expected: ${inspect(y, { depth: 8, breakLength: Infinity })}`,
  ];
  if (collection === "ledger")
    for (const [name, side, row] of [
      ["actual", a, x],
      ["expected", b, y],
    ] as const)
      if (row)
        lines.push(
          `${name} chunks holding ${String(row._id)}: ${inspect(await chunksHolding(side.db, row), { depth: 3, breakLength: Infinity })}`,
        );
  return lines.join("\n");
}

/** The stored ledger chunks that hold `row` (a chunk lists its rows from its `_id` on, so it is among its page's and run key's). */
async function chunksHolding(db: Db, row: Record<string, unknown>): Promise<unknown[]> {
  const chunks = await db
    .collection<StoredLedgerChunk>("ledger")
    .find({ page: row.page as string })
    .toArray();
  return chunks.filter((c) => ledgerRowsOf(c).some((r) => r._id === row._id));
}
