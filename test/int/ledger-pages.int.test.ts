import type { Db, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { isDroverError } from "../../contracts/index.ts";
import {
  runDocId,
  storedLedgerChunk,
  type LedgerCountDoc,
  type LedgerPageDoc,
  type LedgerRow,
  type StoredLedgerChunk,
} from "../../contracts/read-models.ts";
import { readModelClient } from "../../platform/read-model-db.ts";
import { mongoReadModels, type ReadModels } from "../../services/api/index.ts";
import { ensureIndexes, placeLedgerRow, readModelDb } from "../../services/forensics/index.ts";
import { uniqueName } from "../support/isolation.ts";

/**
 * The rows as the projector stores them: cut in flushes (here of 23 rows), each flush's rows of one
 * page and run key one chunk; and as a replay after a crash stores some again, cut otherwise (rows
 * 100–159 once more, in flushes of 17), so a row is in two chunks and must be answered once.
 */
function chunked(rows: readonly LedgerRow[]): StoredLedgerChunk[] {
  const cut = (from: number, to: number, size: number) => {
    const out: StoredLedgerChunk[] = [];
    for (let at = from; at < to; at += size) {
      const groups = new Map<string, LedgerRow[]>();
      for (const r of rows.slice(at, Math.min(to, at + size))) {
        const key = `${r.page}|${r.runKey ?? ""}`;
        groups.set(key, [...(groups.get(key) ?? []), r]);
      }
      out.push(...[...groups.values()].map(storedLedgerChunk));
    }
    return out;
  };
  const once = cut(0, rows.length, 23);
  const replayed = cut(100, 160, 17).filter((c) => !once.some((o) => o._id === c._id));
  expect(replayed.length).toBeGreaterThan(0);
  return [...once, ...replayed];
}

/**
 * The ledger's lanes and pages on a real FerretDB: 700 rows over two tenants (acme's every other
 * one, a recovery row every seventh), placed as the projector places them. Every page the API
 * reads (any `since`, with or without `recovery`, any `limit`) is what the plain filter over all
 * rows gives, and a run's rows are found by their run key; the plan of a page read is an index search.
 * Rows are stored in chunks (`chunked`), some twice.
 */
describe("ledger pages (contracts/read-models.ts lanes) on FerretDB", () => {
  let mongo: MongoClient;
  let db: Db;
  let rm: ReadModels;
  const rows: LedgerRow[] = [];
  beforeAll(async () => {
    mongo = readModelClient(inject("mongoUrl"));
    db = mongo.db(uniqueName("ledgerpages"));
    await ensureIndexes(readModelDb(db));
    const counts = new Map<string, LedgerCountDoc>();
    const starts: LedgerPageDoc[] = [];
    for (let n = 0; n < 700; n++) {
      const tenantId = n % 2 === 0 ? "acme" : "globex";
      const run = `run-${Math.floor(n / 40)}`;
      const exec = n % 3 === 0 ? { executionId: `exec-${Math.floor(n / 40)}` } : {};
      const placed = placeLedgerRow(counts.get(tenantId), {
        _id: `S:${n + 1}:${tenantId}`,
        tenantId,
        stream: "S",
        seq: n + 1,
        at: "2026-01-01T00:00:00.000Z",
        storedAt: "2026-01-01T00:00:00.000Z",
        type: "exec.step-completed",
        aggregateId: "a",
        recovery: n % 7 === 0,
        summary: `row ${n}`,
        detail: {},
        ...(n % 5 === 0 ? exec : { sharedRunId: run, ...exec }),
        ...(n % 5 === 0 && "executionId" in exec
          ? { runKey: `${tenantId}:e:${exec.executionId}` }
          : n % 5 === 0
            ? {}
            : { runKey: `${tenantId}:r:${run}` }),
      });
      if (!placed) throw new Error(`row ${n} refused`);
      rows.push(placed.row);
      counts.set(tenantId, placed.count);
      if (placed.pageStart) starts.push(placed.pageStart);
      // Placing a row again is refused: the count says it is placed.
      expect(placeLedgerRow(placed.count, placed.row)).toBeUndefined();
    }
    await db.collection<StoredLedgerChunk>("ledger").insertMany(chunked(rows));
    await db.collection<LedgerPageDoc>("ledger_pages").insertMany(starts);
    await db.collection<LedgerCountDoc>("ledger_counts").insertMany([...counts.values()]);
    rm = mongoReadModels(db);
  });
  afterAll(async () => {
    await db?.dropDatabase();
    await mongo?.close();
  });

  const expected = (tenantId: string, since: number, limit: number, recovery?: boolean) =>
    rows
      .filter((r) => r.tenantId === tenantId && r.seq > since && (recovery === undefined || r.recovery === recovery))
      .slice(0, limit)
      .map((r) => r._id);

  it(
    "answers every page as the plain filter would, whatever `since` (a row's, another tenant's, none) and lane",
    {
      timeout: 120_000,
    },
    async () => {
      for (const since of [0, 1, 2, 15, 99, 200, 201, 555, 699, 800])
        for (const limit of [7, 150, 5000])
          for (const recovery of [undefined, true, false]) {
            const got = await rm.ledger("acme", { since, limit, ...(recovery === undefined ? {} : { recovery }) });
            expect(
              got.map((r) => r._id),
              `since ${since} limit ${limit} recovery ${recovery}`,
            ).toEqual(expected("acme", since, limit, recovery));
          }
      expect(await rm.ledger("initech", { since: 0, limit: 100 })).toEqual([]);
    },
  );

  it("finds a run's rows and its executions' rows by run key, in stream order, only the tenant's", async () => {
    const got = await rm.runLedger("acme", "run-3", ["exec-3"]);
    const want = rows.filter((r) => r.tenantId === "acme" && (r.sharedRunId === "run-3" || r.executionId === "exec-3"));
    expect(want.length).toBeGreaterThan(10);
    expect(got.map((r) => r._id)).toEqual(want.map((r) => r._id));
  });

  it("reads a page through the page index, not the collection", async () => {
    const plan = JSON.stringify(await db.command({ explain: { find: "ledger", filter: { page: "acme:work:1" } } }));
    expect(plan).toMatch(/SEARCH \S+ USING INDEX \S+_page_1 \(<expr>=\?\)/);
    expect(plan).not.toMatch(/SCAN ledger/);
  });

  it("a row or document of an older read-model shape (written before the upgrade, not yet rebuilt) is 503 read-model-unavailable, not a 500", async () => {
    const old = { tenantId: "umbrella", seq: 1, page: "umbrella:work:0", summary: "old", type: "run.submitted" };
    await db.collection("ledger").insertOne({ _id: "S:1:umbrella" as never, ...old, runKey: "umbrella:r:run-old" });
    await db
      .collection("runs")
      .insertOne({ _id: runDocId("umbrella", "run-old") as never, tenantId: "umbrella", lastSeq: 1, status: "queued" });
    for (const read of [() => rm.runLedger("umbrella", "run-old", []), () => rm.run("umbrella", "run-old")]) {
      const err = await read().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isDroverError(err, "read-model-unavailable"), String(err)).toBe(true);
    }
  });
});
