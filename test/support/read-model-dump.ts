import type { Db } from "mongodb";
import {
  docOf,
  ledgerRowsOf,
  newestDoc,
  READ_MODEL_COLLECTIONS,
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
 * (`ledgerRowsOf`), any other collection as stored: what "the same read models" means. Versions
 * and chunks depend on where the projector's batches fell (live, resumed, rebuilt), not on the stream.
 */
export async function dumpReadModels(db: Db): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const c of READ_MODEL_COLLECTIONS) out[c] = asRead(c, await db.collection(c).find().sort({ _id: 1 }).toArray());
  const rows = new Map((out.ledger as StoredLedgerChunk[]).flatMap(ledgerRowsOf).map((r) => [r._id, r]));
  out.ledger = [...rows.values()].sort((a, b) => (a._id < b._id ? -1 : 1));
  return out;
}
