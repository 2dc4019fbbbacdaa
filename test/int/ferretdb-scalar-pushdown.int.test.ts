import { Double, Long, type Document, type MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { readModelClient } from "../../platform/read-model-db.ts";
import { uniqueName } from "../support/isolation.ts";

type Row = { _id: string; tenantId: unknown; n?: unknown; ok?: boolean };

/**
 * FerretDB v1.24.2's SQLite backend pushes only `_id` equality into SQL: `{tenantId: "t1"}` read and
 * decoded every document of the collection in Go (the forensics ledger, one row per event per tenant,
 * made each tenant's query scan every tenant's rows). scripts/patches/…-scalar-equality-pushed-down
 * pushes top-level equality on strings, booleans and exact integers down as the expression a
 * `createIndex({f: 1})` indexes, keeping documents whose field is an array for the Go filter.
 */
describe("FerretDB (as built by scripts/install-tools.sh): scalar equality is pushed down to the field's index, real server", () => {
  let client: MongoClient;
  const dbName = uniqueName("scalarpush");
  const tenants = 40;
  const rows: Row[] = Array.from({ length: 4000 }, (_, i) => ({
    _id: `r:${i}`,
    tenantId: `t${i % tenants}`,
    n: i % 7,
    ok: i % 2 === 0,
  }));
  // What a naive text comparison would lose: arrays (equality matches an element), numbers of
  // another BSON type with the same value, strings with characters JSON escapes.
  const edge: Row[] = [
    { _id: "e:array", tenantId: ["x", "t3"] },
    { _id: "e:escaped", tenantId: 'é<&>"\\', n: 2.0 },
    { _id: "e:double", tenantId: "t3", n: 3.5 },
    { _id: "e:negzero", tenantId: "z", n: -0 },
    { _id: "e:types", tenantId: "u\u2028\t\u0001😀", n: new Double(2) },
    { _id: "e:long", tenantId: "d", n: Long.fromNumber(2) },
  ];
  const plan = async (filter: Document) =>
    JSON.stringify(
      ((await client.db(dbName).command({ explain: { find: "ledger", filter } })) as { queryPlanner: unknown })
        .queryPlanner,
    );
  const ids = async (filter: Document) =>
    (await client.db(dbName).collection<Row>("ledger").find(filter).toArray()).map((r) => r._id).sort();

  beforeAll(async () => {
    client = readModelClient(inject("mongoUrl"));
    const ledger = client.db(dbName).collection<Row>("ledger");
    await ledger.createIndex({ tenantId: 1 });
    await ledger.insertMany([...rows, ...edge]);
    const bySeq = client.db(dbName).collection<Row & { seq: number }>("bySeq");
    await bySeq.createIndex({ tenantId: 1, seq: 1 });
    await bySeq.insertMany(rows.map((r, seq) => ({ ...r, seq })));
  });
  afterAll(async () => {
    await client.db(dbName).dropDatabase();
    await client.close();
  });

  it("answers {tenantId} with a search of the tenantId index (explain), not a scan", async () => {
    const p = await plan({ tenantId: "t3" });
    expect(p).toMatch(/SEARCH \S+ USING INDEX \S+_tenantId_1 \(<expr>=\?\)/);
    // The second search is the array range: empty when the field is always a scalar.
    expect(p).toMatch(/SEARCH \S+ USING INDEX \S+_tenantId_1 \(<expr>>\? AND <expr><\?\)/);
    expect(p).not.toMatch(/SCAN /);
    // The read models' indexes are compound, tenant first (services/forensics/shell/collections.ts):
    // the ledger's `{tenantId, seq: {$gt}}` searches `{tenantId: 1, seq: 1}` by its first column.
    const seqPlan = JSON.stringify(
      (
        (await client
          .db(dbName)
          .command({ explain: { find: "bySeq", filter: { tenantId: "t3", seq: { $gt: 5 } } } })) as {
          queryPlanner: unknown;
        }
      ).queryPlanner,
    );
    expect(seqPlan).toMatch(/SEARCH \S+ USING INDEX \S+_tenantId_1_seq_1 \(<expr>=\?\)/);
    expect(seqPlan).not.toMatch(/SCAN /);
    // Keys it cannot push stay a scan: operators, and _id still takes the _id index.
    expect(await plan({ tenantId: { $in: ["t3"] } })).toMatch(/SCAN /);
    expect(await plan({ _id: "r:3", tenantId: "t3" })).toMatch(/USING INDEX \S+__id_ \(<expr>=\?\)/);
  });

  it("returns exactly what MongoDB equality matches: array elements, other numeric types, escaped strings", async () => {
    const expected = rows.filter((r) => r.tenantId === "t3").map((r) => r._id);
    expect(await ids({ tenantId: "t3" })).toEqual([...expected, "e:array", "e:double"].sort());
    expect(await ids({ tenantId: 'é<&>"\\' })).toEqual(["e:escaped"]);
    expect(await ids({ tenantId: "t3", n: 3.5 })).toEqual(["e:double"]);
    const twos = rows.filter((r) => r.n === 2).map((r) => r._id);
    expect(await ids({ n: 2 })).toEqual([...twos, "e:escaped", "e:long", "e:types"].sort());
    expect(await ids({ n: new Double(2), tenantId: "d" })).toEqual(["e:long"]);
    expect(await ids({ n: Long.fromNumber(2), tenantId: "u\u2028\t\u0001😀" })).toEqual(["e:types"]);
    expect(await ids({ n: 0, tenantId: "z" })).toEqual(["e:negzero"]);
    const both = rows.filter((r) => r.tenantId === "t4" && r.ok === true && r.n === 4).map((r) => r._id);
    expect(await ids({ tenantId: "t4", ok: true, n: 4 })).toEqual(both.sort());
    expect(await client.db(dbName).collection("ledger").countDocuments({ tenantId: "t5" })).toBe(rows.length / tenants);
  });
});
