import { describe, expect, it } from "vitest";
import { ledgerAnswer, ledgerPagesToRead, pageOf } from "../../../contracts/ledger-pages.ts";
import {
  LEDGER_PAGE_SIZE,
  ledgerViewsOf,
  type LedgerHeadDoc,
  type LedgerPageDoc,
  type LedgerRow,
} from "../../../contracts/read-models.ts";
import { appendToLedgerPages } from "./ledger-pages.ts";

const row = (seq: number, recovery = false, tenantId = "acme"): LedgerRow => ({
  _id: `DROVER:${seq}:${tenantId}`,
  tenantId,
  stream: "DROVER",
  seq,
  at: "2026-01-01T00:00:00.000Z",
  storedAt: "2026-01-01T00:00:00.000Z",
  type: "exec.step-completed",
  aggregateId: "e",
  recovery,
  summary: "s",
  detail: {},
});

interface Store {
  heads: Map<string, LedgerHeadDoc>;
  pages: Map<string, LedgerPageDoc>;
}
const empty = (): Store => ({ heads: new Map(), pages: new Map() });
const copy = (s: Store): Store => ({ heads: new Map(s.heads), pages: new Map(s.pages) });
// Applies a row as the projector does; `write` says which of the two writes land (a crash in between drops the rest).
function apply(s: Store, r: LedgerRow, write: { page?: boolean; head?: boolean } = {}): void {
  const view = r.recovery ? "recovery" : "routine";
  const w = appendToLedgerPages(s.heads.get(`acme:${view}`), (n) => s.pages.get(`acme:${view}:${n}`), r);
  if (w.page && write.page !== false) s.pages.set(w.page._id, w.page);
  if (w.head && write.head !== false) s.heads.set(w.head._id, w.head);
}
const seqsOf = (s: Store) =>
  [...s.pages.values()].sort((a, b) => a.page - b.page).map((p) => [p.page, p.rows.map((r) => r.seq)]);

describe("the ledger's pages (pure fold and query arithmetic; no transport)", () => {
  it("fills pages of LEDGER_PAGE_SIZE rows per view in stream order and lists each page's first sequence", () => {
    const s = empty();
    for (let seq = 1; seq <= 2 * LEDGER_PAGE_SIZE + 10; seq++) apply(s, row(seq, seq % 50 === 0));
    const routine = s.heads.get("acme:routine")!;
    expect(routine.pageFirstSeqs).toEqual([1, 103, 205]);
    expect(s.heads.get("acme:recovery")!.pageFirstSeqs).toEqual([50]);
    expect(s.pages.get("acme:routine:0")!.rows).toHaveLength(LEDGER_PAGE_SIZE);
    expect(s.pages.get("acme:recovery:0")!.rows.map((r) => r.seq)).toEqual([50, 100, 150, 200]);
  });

  it("changes nothing when a batch is applied again", () => {
    const s = empty();
    for (let seq = 1; seq <= 250; seq++) apply(s, row(seq));
    const before = JSON.stringify(seqsOf(s)) + JSON.stringify([...s.heads.values()]);
    for (let seq = 150; seq <= 250; seq++) apply(s, row(seq));
    expect(JSON.stringify(seqsOf(s)) + JSON.stringify([...s.heads.values()])).toBe(before);
  });

  it("ends where an uninterrupted fold ends after a crash between a new page and its head", () => {
    const clean = empty();
    for (let seq = 1; seq <= 150; seq++) apply(clean, row(seq));
    const crashed = empty();
    for (let seq = 1; seq <= 100; seq++) apply(crashed, row(seq));
    // Rows 101 and 102: their page written, the head listing it not.
    const partial = copy(crashed);
    apply(partial, row(101), { head: false });
    apply(partial, row(102), { head: false });
    for (let seq = 101; seq <= 150; seq++) apply(partial, row(seq));
    expect(seqsOf(partial)).toEqual(seqsOf(clean));
    expect([...partial.heads.values()]).toEqual([...clean.heads.values()]);
  });

  it("finds the page holding a sequence and reads just enough pages for a limit", () => {
    expect(pageOf([], 5)).toBe(-1);
    expect(pageOf([10, 20, 30], 9)).toBe(-1);
    expect(pageOf([10, 20, 30], 20)).toBe(1);
    expect(pageOf([10, 20, 30], 99)).toBe(2);
    const s = empty();
    for (let seq = 1; seq <= 1000; seq++) apply(s, row(seq));
    const head = s.heads.get("acme:routine")!;
    expect(ledgerPagesToRead(head, 0, 500)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(ledgerPagesToRead(head, 450, 100)).toEqual([4, 5]);
    expect(ledgerPagesToRead(head, 990, 500)).toEqual([9]);
    const pages = ledgerPagesToRead(head, 450, 100).map((n) => s.pages.get(`acme:routine:${n}`)!);
    expect(ledgerAnswer(pages, 450, 100).map((r) => r.seq)).toEqual(Array.from({ length: 100 }, (_, i) => 451 + i));
  });

  it("puts a row in its tenant-wide view and its run's, found through its execution when it names no run", () => {
    expect(ledgerViewsOf({ recovery: false, sharedRunId: "r1" }, "r2")).toEqual(["routine", "run:r1"]);
    expect(ledgerViewsOf({ recovery: true }, "r2")).toEqual(["recovery", "run:r2"]);
    expect(ledgerViewsOf({ recovery: false })).toEqual(["routine"]);
    const w = appendToLedgerPages(undefined, () => undefined, row(9), "run:r2");
    expect(w.head).toMatchObject({ _id: "acme:run:r2", pageFirstSeqs: [9] });
    expect(w.page).toMatchObject({ _id: "acme:run:r2:0", view: "run:r2", page: 0, lastSeq: 9 });
  });

  it("merges both views in stream order for the unfiltered ledger", () => {
    const s = empty();
    for (let seq = 1; seq <= 30; seq++) apply(s, row(seq, seq % 3 === 0));
    const answer = ledgerAnswer([...s.pages.values()], 4, 10).map((r) => r.seq);
    expect(answer).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
  });
});
