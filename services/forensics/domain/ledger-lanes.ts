import {
  LEDGER_PAGE_SIZE,
  ledgerLaneOf,
  ledgerPageId,
  type LedgerCountDoc,
  type LedgerPageDoc,
  type LedgerRow,
} from "../../../contracts/read-models.ts";
import type { UnplacedLedgerRow } from "./ledger.ts";

/**
 * A new ledger row's place in its tenant's lanes (contracts/read-models.ts `LEDGER_PAGE_SIZE`):
 * the next ordinal of its lane, the page that holds it, and the page's start when it is the page's
 * first row. Idempotent by stream sequence like the run list: a row at or below the count's
 * `lastSeq` was placed (and, rows being written before counts, stored) already and returns
 * undefined; a row placed again after a crash kept the count from following gets the same place,
 * so its insert is the duplicate of the stored one. Facts must come in stream order. Pure.
 */
export function placeLedgerRow(
  count: LedgerCountDoc | undefined,
  entry: UnplacedLedgerRow,
): { row: LedgerRow; count: LedgerCountDoc; pageStart?: LedgerPageDoc } | undefined {
  if (count && entry.seq <= count.lastSeq) return undefined;
  const before = { recovery: count?.recovery ?? 0, work: count?.work ?? 0 };
  const lane = ledgerLaneOf(entry);
  const ordinal = before[lane];
  const page = ledgerPageId(entry.tenantId, lane, Math.floor(ordinal / LEDGER_PAGE_SIZE));
  return {
    row: { ...entry, before, page },
    count: {
      _id: entry.tenantId,
      tenantId: entry.tenantId,
      stream: entry.stream,
      ...before,
      [lane]: ordinal + 1,
      lastSeq: entry.seq,
    },
    ...(ordinal % LEDGER_PAGE_SIZE === 0
      ? { pageStart: { _id: page, tenantId: entry.tenantId, firstSeq: entry.seq } }
      : {}),
  };
}
