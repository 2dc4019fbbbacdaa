import {
  RUN_PAGE_SIZE,
  runPageId,
  type RunCountDoc,
  type RunPageDoc,
  type RunPageEntry,
} from "../../../contracts/read-models.ts";

/**
 * A new submission's place in its tenant's run list: the next ordinal, in the page that holds it.
 * Idempotent by stream sequence: a fact at or below the count's `lastSeq` was applied already and
 * returns undefined (the projector writes nothing). Pure.
 */
export function appendToRunList(
  count: RunCountDoc | undefined,
  page: (n: number) => RunPageDoc | undefined,
  tenantId: string,
  entry: Omit<RunPageEntry, "ordinal">,
): { count: RunCountDoc; page: RunPageDoc } | undefined {
  if (count && entry.seq <= count.lastSeq) return undefined;
  const ordinal = count?.count ?? 0;
  const n = Math.floor(ordinal / RUN_PAGE_SIZE);
  const prev = page(n) ?? { _id: runPageId(tenantId, n), tenantId, page: n, runs: [], lastSeq: 0 };
  return {
    count: { _id: tenantId, tenantId, count: ordinal + 1, lastSeq: entry.seq },
    page: { ...prev, runs: [...prev.runs, { ...entry, ordinal }], lastSeq: entry.seq },
  };
}
