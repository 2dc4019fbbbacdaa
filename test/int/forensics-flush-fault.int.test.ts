import type { Collection, Db, MongoClient } from "mongodb";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { READ_MODEL_COLLECTIONS } from "../../contracts/read-models.ts";
import { readModelClient } from "../../platform/read-model-db.ts";
import { ensureIndexes, forensicsProjection, readModelDb } from "../../services/forensics/index.ts";
import { createEventStore } from "../../streams/event-store.ts";
import type { StoredEvent } from "../../streams/types.ts";
import { appendExamples, appendScenario } from "../support/forensics-scenario.ts";
import { uniqueName } from "../support/isolation.ts";
import { dumpReadModels } from "../support/read-model-dump.ts";
import { freshStreams, type StreamsFixture } from "../support/streams.ts";

const WRITES = new Set(["insertMany", "insertOne", "bulkWrite", "replaceOne", "updateOne", "updateMany"]);

/** `db`, except that the `nth` write call on collection `failing` throws once (after the calls before it landed). */
function failingOnce(db: Db, failing: string, nth: number): Db {
  let calls = 0;
  const writes = (c: Collection) =>
    new Proxy(c, {
      get(t, k) {
        const v = Reflect.get(t, k, t) as unknown;
        if (typeof v !== "function") return v;
        if (!WRITES.has(k as string)) return (v as (...a: unknown[]) => unknown).bind(t);
        return async (...args: unknown[]) => {
          if (++calls === nth) throw new Error(`injected: write ${nth} to ${failing} refused`);
          return (v as (...a: unknown[]) => unknown).apply(t, args);
        };
      },
    });
  return new Proxy(db, {
    get(t, k) {
      if (k !== "collection") return Reflect.get(t, k, t) as unknown;
      return (name: string) => (name === failing ? writes(t.collection(name)) : t.collection(name));
    },
  });
}

/**
 * A projector flush writes collection after collection; one that fails part-way is retried by the
 * runner over what the first try left. Whatever collection refuses, the retried batches end in the
 * same read models as batches that never failed (a run stays in its tenant's list even when its own
 * document landed before the list did).
 */
describe("forensics projection: a flush failing part-way is retried into the same read models (real FerretDB, real nats-server)", () => {
  let mongo: MongoClient;
  let fx: StreamsFixture;
  const dbs: Db[] = [];
  beforeAll(() => {
    mongo = readModelClient(inject("mongoUrl"));
  });
  afterAll(async () => {
    for (const db of dbs) await db.dropDatabase();
    await mongo.close();
  });
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "fx");
  });
  afterEach(async () => {
    await fx.close();
  });
  const freshDb = () => {
    const db = mongo.db(uniqueName("fx"));
    dbs.push(db);
    return db;
  };
  /** Applies `events` five at a time into `db` (written through `through`), retrying a batch that threw once. */
  const project = async (db: Db, events: readonly StoredEvent[], through: Db = db) => {
    await ensureIndexes(readModelDb(db));
    const p = forensicsProjection(readModelDb(through), fx.layout);
    for (let i = 0; i < events.length; i += 5) {
      const batch = events.slice(i, i + 5);
      await p.applyBatch!(batch).catch(() => p.applyBatch!(batch));
    }
    return dumpReadModels(db);
  };

  it("the first or third write to any one collection refused: every collection ends as without the failure", async () => {
    const store = createEventStore(fx.nc, fx.layout);
    await appendExamples(store);
    await appendScenario(store);
    await appendExamples(store);
    const events: StoredEvent[] = [];
    await store.replay({ seq: 1 }, (e) => {
      events.push(e);
    });
    const want = await project(freshDb(), events);
    const differing: string[] = [];
    for (const failing of READ_MODEL_COLLECTIONS)
      for (const nth of [1, 3]) {
        const db = freshDb();
        const got = await project(db, events, failingOnce(db, failing, nth));
        for (const c of READ_MODEL_COLLECTIONS)
          if (JSON.stringify(got[c]) !== JSON.stringify(want[c]))
            differing.push(`${failing} write ${nth}: ${c} differs`);
      }
    expect(differing).toEqual([]);
  }, 120_000);
});
