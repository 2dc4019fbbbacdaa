import { pageOf } from "../../../contracts/ledger-pages.ts";
import {
  LEDGER_PAGE_SIZE,
  ledgerHeadId,
  ledgerPageId,
  ledgerViewOf,
  type LedgerHeadDoc,
  type LedgerPageDoc,
  type LedgerRow,
  type LedgerView,
} from "../../../contracts/read-models.ts";

/**
 * What appending one ledger row writes: the page it lands in and, when it starts a page, the head
 * (then always with its page, maybe unchanged, so the projector can write the page first).
 */
export interface LedgerPageWrites {
  readonly page?: LedgerPageDoc;
  readonly head?: LedgerHeadDoc;
}

/**
 * Appends a ledger row to its tenant's pages of one of its views (contracts/read-models.ts
 * "ledger_pages"; by default its tenant-wide view).
 * Idempotent by stream sequence, read from the documents themselves: a row at or below its page's
 * `lastSeq` was applied already and writes nothing. The projector writes pages before heads, so a
 * crash between the two leaves at most a page the head does not list yet: `page(n + 1)` is read
 * when the last listed page is full, and a page already holding the row only gets listed. `page`
 * answers the stored pages the row can land in (the one {@link pageOf} names, and the next). Pure.
 */
export function appendToLedgerPages(
  head: LedgerHeadDoc | undefined,
  page: (n: number) => LedgerPageDoc | undefined,
  row: LedgerRow,
  view: LedgerView = ledgerViewOf(row),
): LedgerPageWrites {
  const firsts = head?.pageFirstSeqs ?? [];
  const appended = (prev: LedgerPageDoc | undefined, n: number): LedgerPageDoc => ({
    _id: ledgerPageId(row.tenantId, view, n),
    tenantId: row.tenantId,
    view,
    page: n,
    rows: [...(prev?.rows ?? []), row],
    lastSeq: row.seq,
  });
  const p = pageOf(firsts, row.seq);
  if (p >= 0) {
    const cur = page(p);
    if (cur && cur.lastSeq >= row.seq) return {};
    if (!cur || cur.rows.length < LEDGER_PAGE_SIZE) return { page: appended(cur, p) };
    // A full page that is not the last, yet older than the row: rows arrive in stream order, so never.
    if (p < firsts.length - 1) return {};
  } else if (firsts.length > 0) return {};
  const n = p + 1;
  const next = page(n);
  const written = next && next.lastSeq >= row.seq ? next : appended(next, n);
  const first = written.rows[0]!.seq;
  return {
    page: written,
    head: {
      _id: ledgerHeadId(row.tenantId, view),
      tenantId: row.tenantId,
      view,
      pageFirstSeqs: [...firsts, first],
      lastSeq: first,
    },
  };
}
