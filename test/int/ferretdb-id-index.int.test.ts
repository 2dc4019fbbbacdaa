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
