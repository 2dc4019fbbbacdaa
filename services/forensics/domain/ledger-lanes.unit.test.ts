import { describe, expect, it } from "vitest";
import {
  LEDGER_PAGE_SIZE,
  ledgerRowsIn,
  ledgerRowsOf,
  storedLedgerChunk,
  type LedgerCountDoc,
} from "../../../contracts/read-models.ts";
import type { UnplacedLedgerRow } from "./ledger.ts";
import { placeLedgerRow } from "./ledger-lanes.ts";

const entry = (seq: number, recovery = false): UnplacedLedgerRow => ({
  _id: `S:${seq}:acme`,
  tenantId: "acme",
  stream: "S",
  seq,
  at: "2026-01-01T00:00:00.000Z",
  storedAt: "2026-01-01T00:00:00.000Z",
  type: recovery ? "exec.paused-for-recovery" : "exec.step-completed",
  aggregateId: "e1",
  recovery,
  summary: "",
  detail: {},
});

describe("placeLedgerRow (pure: no store)", () => {
  it("numbers each lane in stream order, pages it, and records the other lane's count before the row", () => {
    let count: LedgerCountDoc | undefined;
    const placed = [];
    for (let seq = 1; seq <= 2 * LEDGER_PAGE_SIZE + 3; seq++) {
      const p = placeLedgerRow(count, entry(seq, seq % 10 === 0))!;
      placed.push(p);
      count = p.count;
    }
    const tenth = placed[9]!;
    expect(tenth.row.before).toEqual({ recovery: 0, work: 9 });
    expect(tenth.row.page).toBe("acme:recovery:0");
    expect(tenth.pageStart).toEqual({ _id: "acme:recovery:0", tenantId: "acme", firstSeq: 10 });
    const work100 = placed.find((p) => p.row.before.work === LEDGER_PAGE_SIZE && !p.row.recovery)!;
    expect(work100.row.page).toBe("acme:work:1");
    expect(work100.pageStart?.firstSeq).toBe(work100.row.seq);
    expect(placed.filter((p) => p.pageStart).map((p) => p.pageStart!._id)).toEqual([
      "acme:work:0",
      "acme:recovery:0",
      "acme:work:1",
    ]);
    expect(count).toMatchObject({ _id: "acme", stream: "S", recovery: 20, work: 183, lastSeq: 203 });
  });

  it("refuses a row the count already placed, and places a row again the same way when the count lagged", () => {
    const first = placeLedgerRow(undefined, entry(1))!;
    const second = placeLedgerRow(first.count, entry(2, true))!;
    expect(placeLedgerRow(second.count, entry(2, true))).toBeUndefined();
    expect(placeLedgerRow(second.count, entry(1))).toBeUndefined();
    // A crash after the rows were stored but before the count: the same place, so the same row.
    expect(placeLedgerRow(first.count, entry(2, true))).toEqual(second);
  });

  it("stores placed rows of one page and run key as one chunk (StoredLedgerChunk) and reads them back as placed", () => {
    const place = (count: Parameters<typeof placeLedgerRow>[0], seq: number) =>
      placeLedgerRow(count, {
        ...entry(seq),
        summary: "step s1 completed (attempt 1)",
        detail: { stepId: "s1", attempt: 1, epoch: null, rows: [{ a: 1 }] },
        sharedRunId: "r1",
        executionId: "e1",
        runKey: "acme:r:r1",
      })!;
    const first = place(undefined, 1);
    const second = place(first.count, 2);
    const stored = storedLedgerChunk([first.row, second.row]);
    expect(Object.keys(stored).sort()).toEqual(["_id", "page", "rows", "runKey", "tenantId"]);
    expect(stored).toMatchObject({ _id: "S:1:acme/2", tenantId: "acme", page: "acme:work:0", runKey: "acme:r:r1" });
    expect(ledgerRowsOf(stored)).toEqual([first.row, second.row]);
    const { runKey: _k, ...keyless } = first.row;
    expect(ledgerRowsOf(storedLedgerChunk([keyless]))).toEqual([keyless]);
    // A replay may store a row in a second chunk: read once, in stream order, and only the tenant's.
    const again = storedLedgerChunk([second.row]);
    const other = { ...storedLedgerChunk([second.row]), _id: "x", tenantId: "umbrella" };
    expect(ledgerRowsIn([again, stored, other], "acme")).toEqual([first.row, second.row]);
  });
});
