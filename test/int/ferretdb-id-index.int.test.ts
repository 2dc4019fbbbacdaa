import type { Document, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { readModelClient } from "../../platform/read-model-db.ts";
import { uniqueName } from "../support/isolation.ts";

/**
 * FerretDB v1.24.2's SQLite backend pushes `{_id: <string>}` down as `_ferretdb_sjson->'$._id' = ?`
 * while its unique `_id` index is on `_ferretdb_sjson->"_id"`; SQLite uses an expression index only
 * for the same expression, so every lookup, update and delete by `_id` scanned the table (the run
 * list's first page took 4.8–8 s at 10 000 runs, the newest documents being the last found). The
 * patch in scripts/patches/ spells the pushdown as the index is. The read models find everything
 * by `_id` (services/api/shell/read-models.ts), so the server we build must use the index.
 * A second patch pushes `_id` down when the filter has other keys too (the projector's versioned
 * upserts `{_id, lastSeq: {$lt}}` scanned the whole collection for every write).
 */
describe("FerretDB (as built by scripts/install-tools.sh): lookups by _id use the _id index, real server", () => {
  let client: MongoClient;
  const dbName = uniqueName("idindex");
  beforeAll(() => {
    client = readModelClient(inject("mongoUrl"));
  });
  afterAll(async () => {
    await client.db(dbName).dropDatabase();
    await client.close();
  });

  it("answers a find by a string _id with an index search (explain), not a scan; other filters still scan", async () => {
    const db = client.db(dbName);
    await db
      .collection<{ _id: string; n: number }>("docs")
      .insertMany(Array.from({ length: 200 }, (_, n) => ({ _id: `t:${n}`, n })));
    const plan = async (filter: Document) =>
      JSON.stringify(
        ((await db.command({ explain: { find: "docs", filter, limit: 1 } })) as { queryPlanner: unknown }).queryPlanner,
      );
    expect(await plan({ _id: "t:199" })).toMatch(/SEARCH \S+ USING INDEX \S+__id_ \(<expr>=\?\)/);
    // What the read models avoid: any other filter is not pushed down at all.
    expect(await plan({ n: 199 })).toMatch(/SCAN /);
    expect(await db.collection<{ _id: string; n: number }>("docs").findOne({ _id: "t:199" })).toEqual({
      _id: "t:199",
      n: 199,
    });
  });

  it("pushes _id down with other keys too ({_id, tenantId}, versioned upserts {_id, lastSeq: {$lt}}), still applying every key", async () => {
    const db = client.db(dbName);
    const docs = db.collection<{ _id: string; tenantId: string; lastSeq: number }>("versioned");
    await docs.insertMany(Array.from({ length: 200 }, (_, n) => ({ _id: `t:${n}`, tenantId: "t", lastSeq: 5 })));
    const plan = async (filter: Document) =>
      JSON.stringify(
        ((await db.command({ explain: { find: "versioned", filter } })) as { queryPlanner: unknown }).queryPlanner,
      );
    // Without the second patch these scanned the table: every projector write and tenant-checked lookup.
    expect(await plan({ _id: "t:7", tenantId: "t" })).toMatch(/SEARCH \S+ USING INDEX \S+__id_ \(<expr>=\?\)/);
    expect(await plan({ _id: "t:7", lastSeq: { $lt: 9 } })).toMatch(/SEARCH \S+ USING INDEX \S+__id_ \(<expr>=\?\)/);
    // The other keys still decide: pushing _id down only narrows what is read.
    expect(await docs.findOne({ _id: "t:7", tenantId: "u" })).toBeNull();
    const newer = { _id: "t:7", tenantId: "t", lastSeq: 9 };
    await docs.replaceOne({ _id: "t:7", lastSeq: { $lt: 9 } }, newer, { upsert: true });
    const stale = docs.replaceOne({ _id: "t:7", lastSeq: { $lt: 6 } }, { ...newer, lastSeq: 6 }, { upsert: true });
    await expect(stale).rejects.toMatchObject({ code: 11000 }); // no older version to replace: the upsert's insert collides
    expect(await docs.findOne({ _id: "t:7" })).toEqual(newer);
  });

  it("updates and deletes by _id touch exactly that document", async () => {
    const docs = client.db(dbName).collection<{ _id: string; v: number }>("writes");
    await docs.insertMany([
      { _id: "a", v: 1 },
      { _id: "b", v: 1 },
    ]);
    expect((await docs.updateOne({ _id: "b" }, { $set: { v: 2 } })).modifiedCount).toBe(1);
    expect((await docs.replaceOne({ _id: "a" }, { v: 3 })).modifiedCount).toBe(1);
    expect((await docs.deleteOne({ _id: "a" })).deletedCount).toBe(1);
    expect(await docs.find({}).toArray()).toEqual([{ _id: "b", v: 2 }]);
  });
});
