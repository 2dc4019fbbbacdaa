import { docOf, newestDoc, type StoredDoc } from "../../contracts/read-models.ts";

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
