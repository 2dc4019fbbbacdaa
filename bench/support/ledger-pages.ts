import {
  ledgerHeadId,
  ledgerPageId,
  ledgerViewsOf,
  type LedgerHeadDoc,
  type LedgerPageDoc,
  type LedgerRow,
} from "../../contracts/read-models.ts";
import { appendToLedgerPages, type ReadModelDb } from "../../services/forensics/index.ts";

/** Writes the ledger's heads and pages for `rows` (in stream order), folded by the projector's own pure function. */
export async function writeLedgerPages(
  m: ReadModelDb,
  rows: readonly LedgerRow[],
  runOfExecution: (executionId: string) => string | undefined,
): Promise<void> {
  const heads = new Map<string, LedgerHeadDoc>();
  const pages = new Map<string, LedgerPageDoc>();
  for (const row of rows)
    for (const view of ledgerViewsOf(row, row.executionId ? runOfExecution(row.executionId) : undefined)) {
      const head = heads.get(ledgerHeadId(row.tenantId, view));
      const w = appendToLedgerPages(head, (n) => pages.get(ledgerPageId(row.tenantId, view, n)), row, view);
      if (w.page) pages.set(w.page._id, w.page);
      if (w.head) heads.set(w.head._id, w.head);
    }
  const all = [...pages.values()];
  for (let i = 0; i < all.length; i += 100) await m.ledgerPages.insertMany(all.slice(i, i + 100));
  const hs = [...heads.values()];
  for (let i = 0; i < hs.length; i += 1000) await m.ledgerHeads.insertMany(hs.slice(i, i + 1000));
}
