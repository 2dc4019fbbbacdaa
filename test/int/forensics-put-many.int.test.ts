import type { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { readModelClient } from "../../platform/read-model-db.ts";
import { byId, ensureIndexes, insertNewOrPut, putManyIfNewer, readModelDb } from "../../services/forensics/index.ts";
import { uniqueName } from "../support/isolation.ts";

type Doc = { _id: string; lastSeq: number; v: string };

// Boundary: the projector's versioned document writes against the real FerretDB (SQLite backend).
describe("versioned document writes of one batch (putManyIfNewer) against real FerretDB", () => {
  let mongo: MongoClient;
  beforeAll(() => {
    mongo = readModelClient(inject("mongoUrl"));
  });
  afterAll(async () => {
    await mongo?.close();
  });

  it("a document already at a newer version is skipped and every other document of the batch is still written", async () => {
    const db = mongo.db(uniqueName("putmany"));
    const c = db.collection<Doc>("docs");
    await putManyIfNewer(c, [
      { _id: "a", lastSeq: 3, v: "a3" },
      { _id: "b", lastSeq: 1, v: "b1" },
    ]);
    // "a" at seq 1 is older than what is stored (a re-applied batch): skipped, and "b" must still move.
    // An unordered bulkWrite stopped at the duplicate key and left "b" at b1.
    await putManyIfNewer(c, [
      { _id: "a", lastSeq: 1, v: "old" },
      { _id: "b", lastSeq: 5, v: "b5" },
      { _id: "c", lastSeq: 5, v: "c5" },
    ]);
    expect(await c.find({}).sort({ _id: 1 }).toArray()).toEqual([
      { _id: "a", lastSeq: 3, v: "a3" },
      { _id: "b", lastSeq: 5, v: "b5" },
      { _id: "c", lastSeq: 5, v: "c5" },
    ]);
    await db.dropDatabase();
  });

  it("several documents already newer, first, middle and last of one batch: each skipped, every other one written", async () => {
    const db = mongo.db(uniqueName("putmany"));
    const c = db.collection<Doc>("docs");
    const stored = ["a", "c", "e"].map((id) => ({ _id: id, lastSeq: 9, v: `${id}9` }));
    await putManyIfNewer(c, stored);
    await putManyIfNewer(c, [
      { _id: "a", lastSeq: 2, v: "old" },
      { _id: "b", lastSeq: 2, v: "b2" },
      { _id: "c", lastSeq: 2, v: "old" },
      { _id: "d", lastSeq: 2, v: "d2" },
      { _id: "e", lastSeq: 2, v: "old" },
    ]);
    // Newer versions of existing documents replace them; new documents are inserted.
    await putManyIfNewer(c, [
      { _id: "a", lastSeq: 10, v: "a10" },
      { _id: "f", lastSeq: 1, v: "f1" },
    ]);
    expect(await c.find({}).sort({ _id: 1 }).toArray()).toEqual([
      { _id: "a", lastSeq: 10, v: "a10" },
      { _id: "b", lastSeq: 2, v: "b2" },
      { _id: "c", lastSeq: 9, v: "c9" },
      { _id: "d", lastSeq: 2, v: "d2" },
      { _id: "e", lastSeq: 9, v: "e9" },
      { _id: "f", lastSeq: 1, v: "f1" },
    ]);
    await db.dropDatabase();
  });

  it("fresh documents are inserted in one call; one whose key is taken falls back to the versioned write (newer wins, older is skipped)", async () => {
    const db = mongo.db(uniqueName("putmany"));
    const c = db.collection<Doc>("docs");
    await putManyIfNewer(c, [
      { _id: "b", lastSeq: 9, v: "b9" },
      { _id: "d", lastSeq: 1, v: "d1" },
    ]);
    // The cache thought b and d were not stored (a retried batch after a partial write): b's stored
    // version is newer and stays, d's is older and is replaced, a, c and e are inserted.
    await insertNewOrPut(c, [
      { _id: "a", lastSeq: 5, v: "a5" },
      { _id: "b", lastSeq: 5, v: "old" },
      { _id: "c", lastSeq: 5, v: "c5" },
      { _id: "d", lastSeq: 5, v: "d5" },
      { _id: "e", lastSeq: 5, v: "e5" },
    ]);
    expect(await c.find({}).sort({ _id: 1 }).toArray()).toEqual([
      { _id: "a", lastSeq: 5, v: "a5" },
      { _id: "b", lastSeq: 9, v: "b9" },
      { _id: "c", lastSeq: 5, v: "c5" },
      { _id: "d", lastSeq: 5, v: "d5" },
      { _id: "e", lastSeq: 5, v: "e5" },
    ]);
    await db.dropDatabase();
  });

  it("150 newer versions in one batch are all written (FerretDB v1.24 stalls an update command at its 100th update)", async () => {
    const db = mongo.db(uniqueName("putmany"));
    const c = db.collection<Doc>("docs");
    const ids = Array.from({ length: 150 }, (_, i) => `d${String(i).padStart(3, "0")}`);
    await insertNewOrPut(
      c,
      ids.map((id) => ({ _id: id, lastSeq: 1, v: "old" })),
    );
    // One bulkWrite of 150 replaceOne never answered: FerretDB held the command after its 99th update.
    await putManyIfNewer(
      c,
      ids.map((id) => ({ _id: id, lastSeq: 2, v: "new" })),
    );
    expect(await c.countDocuments({ v: "new" })).toBe(150);
    await db.dropDatabase();
  }, 20_000);

  it("ensureIndexes drops the indexes an earlier version created and keeps the query indexes", async () => {
    const db = mongo.db(uniqueName("putmany"));
    await ensureIndexes(readModelDb(db)); // an empty database: nothing to drop, the query indexes made
    const ledger = db.collection("ledger");
    await ledger.createIndex({ tenantId: 1, recovery: 1, seq: 1 });
    await ledger.createIndex({ tenantId: 1, sharedRunId: 1, seq: 1 });
    await ledger.createIndex({ tenantId: 1, seq: 1 });
    const runs = db.collection("runs");
    await runs.createIndex({ tenantId: 1, sharedRunId: 1 });
    await ensureIndexes(readModelDb(db));
    await ensureIndexes(readModelDb(db)); // idempotent
    expect((await ledger.listIndexes().toArray()).map((i) => i.name).sort()).toEqual(["_id_", "page_1", "runKey_1"]);
    // Runs are read by their versions' key only.
    expect((await runs.listIndexes().toArray()).map((i) => i.name).sort()).toEqual(["_id_", "key_1"]);
    // A document's versions are found through that index, never by a scan of the collection.
    const plan = JSON.stringify(await db.command({ explain: { find: "runs", filter: { key: "t:r1" } } }));
    expect(plan).toMatch(/SEARCH \S+ USING INDEX \S+_key_1 \(<expr>=\?\)/);
    expect(plan).not.toMatch(/SCAN runs/);
    await db.dropDatabase();
  });

  it("run and execution documents are stored as versions (StoredDoc, NUL replaced before encoding), inserted once, and read back as the newest", async () => {
    const db = mongo.db(uniqueName("putmany"));
    const runs = db.collection<{ _id: string; tenantId: string; lastSeq: number; reason: string; n: number[] }>("runs");
    await insertNewOrPut(runs, [{ _id: "t:r1", tenantId: "t", lastSeq: 2, reason: "bad\u0000byte", n: [1] }]);
    await putManyIfNewer(runs, [
      { _id: "t:r1", tenantId: "t", lastSeq: 1, reason: "older", n: [] },
      { _id: "t:r2", tenantId: "t", lastSeq: 4, reason: "ok", n: [2, 3] },
    ]);
    // A version written again (a retried batch) is a duplicate key: skipped, not an error.
    await putManyIfNewer(runs, [{ _id: "t:r2", tenantId: "t", lastSeq: 4, reason: "ok", n: [2, 3] }]);
    const raw = await runs.find({}).sort({ _id: 1 }).toArray();
    expect(raw.map((d) => d._id)).toEqual(["t:r1@1", "t:r1@2", "t:r2@4"]);
    expect(raw.map((d) => Object.keys(d).sort())).toEqual(raw.map(() => ["_id", "d", "key", "lastSeq", "tenantId"]));
    expect(await byId(runs, "t:r1")).toEqual({
      _id: "t:r1",
      tenantId: "t",
      lastSeq: 2,
      reason: "bad\uFFFDbyte",
      n: [1],
    });
    expect(await byId(runs, "t:r2")).toEqual({ _id: "t:r2", tenantId: "t", lastSeq: 4, reason: "ok", n: [2, 3] });
    await db.dropDatabase();
  });
});
