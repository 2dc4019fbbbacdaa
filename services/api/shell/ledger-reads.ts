import type { Collection, Filter } from "mongodb";
import {
  LEDGER_LANES,
  LEDGER_PAGE_SIZE,
  ledgerLaneOf,
  ledgerPageId,
  type LaneCounts,
  type LedgerCountDoc,
  type LedgerLane,
  type LedgerPageDoc,
  ledgerRowsIn,
  type LedgerRow,
  type StoredLedgerChunk,
} from "../../../contracts/read-models.ts";

/** The ledger's collections as the API reads them. */
export interface LedgerCollections {
  readonly ledger: Collection<StoredLedgerChunk>;
  readonly counts: Collection<LedgerCountDoc>;
  readonly pages: Collection<LedgerPageDoc>;
}

const bySeq = (a: { readonly seq: number }, b: { readonly seq: number }) => a.seq - b.seq;
const byId = <T extends { readonly _id: string }>(c: Collection<T>, id: string) =>
  c.findOne({ _id: id } as Filter<T>) as Promise<T | null>;

/**
 * The tenant's ledger rows after `since` (exclusive), in stream order, at most `limit`, of one lane
 * or (`recovery` undefined) both, merged. Every read is by `_id` or by `page` (contracts/read-models.ts
 * "lanes"), so it costs O(limit + log of the tenant's rows), never the tenant's whole ledger: the
 * count, a binary search of the page starts (none for `since` 0 or at the count's end), then the pages
 * that hold the answer. Rows are stored in chunks (`StoredLedgerChunk`), so no row is found by `_id`.
 */
export async function ledgerAfter(
  c: LedgerCollections,
  tenantId: string,
  q: { readonly since: number; readonly recovery?: boolean; readonly limit: number },
): Promise<LedgerRow[]> {
  const count = await byId(c.counts, tenantId);
  if (!count || count.tenantId !== tenantId) return [];
  const lanes = q.recovery === undefined ? LEDGER_LANES : [ledgerLaneOf({ recovery: q.recovery })];
  const starts = await startsAfter(c, count, q.since, lanes);
  const parts = await Promise.all(
    lanes.map((lane) => laneRows(c, tenantId, lane, starts[lane], Math.min(q.limit, count[lane] - starts[lane]))),
  );
  return parts.flat().sort(bySeq).slice(0, q.limit);
}

/** The first ordinal of each lane whose row comes after stream sequence `since`. */
async function startsAfter(
  c: LedgerCollections,
  count: LedgerCountDoc,
  since: number,
  lanes: readonly LedgerLane[],
): Promise<LaneCounts> {
  if (since <= 0) return { recovery: 0, work: 0 };
  if (since >= count.lastSeq) return { recovery: count.recovery, work: count.work };
  const found = await Promise.all(lanes.map((lane) => laneStart(c, count, lane, since)));
  return { recovery: 0, work: 0, ...Object.fromEntries(lanes.map((lane, i) => [lane, found[i]!])) };
}

/** How many of the lane's rows have a sequence ≤ `since`: a binary search of its page starts, then one page. */
async function laneStart(c: LedgerCollections, count: LedgerCountDoc, lane: LedgerLane, since: number) {
  const pages = Math.ceil(count[lane] / LEDGER_PAGE_SIZE);
  // The last page starting at or before `since` (-1: none).
  let lo = -1;
  let hi = pages - 1;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi + 1) / 2);
    const start = await byId(c.pages, ledgerPageId(count.tenantId, lane, mid));
    if (!start) throw new Error(`ledger page ${ledgerPageId(count.tenantId, lane, mid)} has no start`);
    if (start.firstSeq <= since) lo = mid;
    else hi = mid - 1;
  }
  if (lo < 0) return 0;
  const chunks = await c.ledger.find({ page: ledgerPageId(count.tenantId, lane, lo) }).toArray();
  return lo * LEDGER_PAGE_SIZE + ledgerRowsIn(chunks, count.tenantId).filter((r) => r.seq <= since).length;
}

/** The lane's rows with ordinals `from` … `from + n - 1`, read from the pages that hold them. */
async function laneRows(c: LedgerCollections, tenantId: string, lane: LedgerLane, from: number, n: number) {
  if (n <= 0) return [];
  const first = Math.floor(from / LEDGER_PAGE_SIZE);
  const last = Math.floor((from + n - 1) / LEDGER_PAGE_SIZE);
  const pages = await Promise.all(
    Array.from({ length: last - first + 1 }, (_, i) =>
      c.ledger.find({ page: ledgerPageId(tenantId, lane, first + i) }).toArray(),
    ),
  );
  return ledgerRowsIn(pages.flat(), tenantId).filter((r) => {
    const ordinal = r.before[lane];
    return ordinal >= from && ordinal < from + n;
  });
}

/**
 * The run's rows and those of its executions, in stream order: one `{runKey}` query each
 * (services/forensics/domain/ledger.ts `runKeyOf`), so O(the run's rows).
 */
export async function runRows(
  ledger: Collection<StoredLedgerChunk>,
  tenantId: string,
  sharedRunId: string,
  executionIds: readonly string[],
): Promise<LedgerRow[]> {
  const keys = [`${tenantId}:r:${sharedRunId}`, ...executionIds.map((id) => `${tenantId}:e:${id}`)];
  const found = ledgerRowsIn(
    (await Promise.all(keys.map((runKey) => ledger.find({ runKey }).toArray()))).flat(),
    tenantId,
  );
  const ids = new Set(executionIds);
  const mine = new Map(
    found
      .filter(
        (r) =>
          r.tenantId === tenantId &&
          (r.sharedRunId === sharedRunId || (r.executionId !== undefined && ids.has(r.executionId))),
      )
      .map((r) => [r._id, r]),
  );
  return [...mine.values()].sort(bySeq);
}
