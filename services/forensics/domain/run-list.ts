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
 * returns undefined (the projector writes nothing); a page that already holds the entry (written
 * before a crash kept the count from following) is returned as it is, and only the count moves. The
 * projector writes the page before the count: the other order lost the entry for good when it
 * crashed between the two (the count said "applied"). Pure.
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
  const written = prev.runs.some((r) => r.seq === entry.seq);
  return {
    count: { _id: tenantId, tenantId, count: ordinal + 1, lastSeq: entry.seq },
    page: written ? prev : { ...prev, runs: [...prev.runs, { ...entry, ordinal }], lastSeq: entry.seq },
  };
}
