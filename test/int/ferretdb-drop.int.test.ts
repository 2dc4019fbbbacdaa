import type { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { readModelClient } from "../../platform/read-model-db.ts";
import { uniqueName } from "../support/isolation.ts";

/**
 * FerretDB v1.24.2's SQLite backend removed a dropped database's file while connections were still
 * writing to it: the database re-created under the same name shared the old WAL, so old rows came
 * back and reads failed with "database disk image is malformed" (5 of 20 rounds before the patch in
 * scripts/patches/). The forensics proof drops the read models under a live projector, so the
 * server we build must survive exactly this.
 */
describe("FerretDB (as built by scripts/install-tools.sh): dropDatabase under concurrent writes, real server", () => {
  let writer: MongoClient;
  let reader: MongoClient;
  beforeAll(() => {
    writer = readModelClient(inject("mongoUrl"));
    reader = readModelClient(inject("mongoUrl"));
  });
  afterAll(async () => {
    await writer.close();
    await reader.close();
  });

  it("leaves no row written before the drop and never a malformed database, round after round", async () => {
    const db = uniqueName("dropwrites");
    const failures: string[] = [];
    const survivors: number[] = [];
    let inserted = 0;
    for (let round = 0; round < 12; round++) {
      let stop = false;
      let n = 0;
      const writers = Array.from({ length: 6 }, async (_, w) => {
        while (!stop) {
          try {
            await writer
              .db(db)
              .collection("rows")
              .insertOne({ _id: `${round}-${w}-${n++}`, t: Date.now(), pad: "x".repeat(400) } as never);
            inserted++;
          } catch (e) {
            failures.push(String(e).slice(0, 200));
          }
        }
      });
      // Writes in flight before the drop: at least 50 this round (time alone is load-dependent).
      const before = inserted;
      for (let waited = 0; waited < 5_000 && (waited < 150 || inserted - before < 50); waited += 25)
        await new Promise((r) => setTimeout(r, 25));
      const droppedAt = Date.now();
      await reader.db(db).dropDatabase();
      await new Promise((r) => setTimeout(r, 150));
      stop = true;
      await Promise.all(writers);
      // At most one insert per writer can have started before the drop and landed after it.
      survivors.push(
        await reader
          .db(db)
          .collection("rows")
          .countDocuments({ t: { $lt: droppedAt } }),
      );
      await reader.db(db).dropDatabase();
    }
    expect(inserted).toBeGreaterThan(500);
    expect(failures.filter((f) => /malformed|disk image/.test(f))).toEqual([]);
    expect(Math.max(...survivors), `rows from before the drop, per round: ${survivors.join(" ")}`).toBeLessThanOrEqual(
      6,
    );
  });
});
