import { LEDGER_PAGE_SIZE, type LedgerHeadDoc, type LedgerPageDoc, type LedgerRow } from "./read-models.ts";

// The arithmetic of the ledger's pages (read-models.ts "ledger_pages"), shared by the projector that
// writes them and the API that reads them.

/** The page that holds (or would hold) `seq`: the last whose first sequence is ≤ `seq`; -1 before the first. Pure. */
export function pageOf(firstSeqs: readonly number[], seq: number): number {
  let lo = 0;
  let hi = firstSeqs.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (firstSeqs[mid]! <= seq) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/**
 * The pages a query for `limit` rows after `since` reads: the one holding `since` and enough after
 * it for `limit` rows (every page but the last is full). Pure.
 */
export function ledgerPagesToRead(head: LedgerHeadDoc, since: number, limit: number): number[] {
  const start = Math.max(0, pageOf(head.pageFirstSeqs, since));
  const end = Math.min(head.pageFirstSeqs.length, start + Math.ceil(limit / LEDGER_PAGE_SIZE) + 1);
  return Array.from({ length: Math.max(0, end - start) }, (_, i) => start + i);
}

/** The first `limit` rows after `since` of the pages read (of one view or both), in stream order. Pure. */
export function ledgerAnswer(pages: readonly LedgerPageDoc[], since: number, limit: number): LedgerRow[] {
  return pages
    .flatMap((p) => p.rows.filter((r) => r.seq > since))
    .sort((a, b) => a.seq - b.seq)
    .slice(0, limit);
}
