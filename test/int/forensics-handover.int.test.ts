import type { Db, MongoClient } from "mongodb";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { readModelClient } from "../../platform/read-model-db.ts";
import {
  isBuilt,
  PROJECTION_NAME,
  markerId,
  readModelDb,
  startForensics,
  type ForensicsService,
} from "../../services/forensics/index.ts";
import { createEventStore } from "../../streams/event-store.ts";
import type { EventStore } from "../../streams/types.ts";
import { appendExamples, appendScenario } from "../support/forensics-scenario.ts";
import { uniqueName } from "../support/isolation.ts";
import { dumpReadModels } from "../support/read-model-dump.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

const bound = <T extends object>(t: T, k: string | symbol): unknown => {
  const v = Reflect.get(t, k) as unknown;
  return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
};

/** `db`, except that `after(args)` runs once a `method` call on the `checkpoints` collection has landed. */
function afterCheckpointWrite(db: Db, method: "replaceOne" | "updateOne", after: (args: unknown[]) => void): Db {
  return new Proxy(db, {
    get(t, k) {
      if (k !== "collection") return bound(t, k);
      return (name: string) => {
        const c = t.collection(name);
        if (name !== "checkpoints") return c;
        return new Proxy(c, {
          get(ct, ck) {
            if (ck !== method) return bound(ct, ck);
            return async (...a: unknown[]) => {
              const r = await (ct[method] as (...x: unknown[]) => Promise<unknown>).apply(ct, a);
              after(a);
              return r;
            };
          },
        });
      };
    },
  });
}

// Issue 16 (every service replicated): forensics replicas hand the writer lease over; what the
// previous writer leaves behind must be finished by the next one into a complete build.
describe("forensics writer handover against real FerretDB and a real nats-server", () => {
  let mongo: MongoClient;
  let fx: StreamsFixture;
  let store: EventStore;
  let dbs: Db[];
  let services: ForensicsService[];
  beforeAll(() => {
    mongo = readModelClient(inject("mongoUrl"));
  });
  afterAll(async () => {
    await mongo.close();
  });
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "fh");
    store = createEventStore(fx.nc, fx.layout);
    dbs = [];
    services = [];
  });
  afterEach(async () => {
    for (const svc of services) await svc.stop();
    for (const db of dbs) await db.dropDatabase();
    await fx.close();
  });
  const freshDb = () => {
    const db = mongo.db(uniqueName("fh"));
    dbs.push(db);
    return db;
  };
  const start = async (db: Db, writable?: () => boolean) => {
    const svc = await startForensics({
      handle: fx.nc,
      layout: fx.layout,
      db,
      watchdogMs: 0,
      ...(writable ? { writable } : {}),
    });
    services.push(svc);
    return svc;
  };

  it("a writer stopped right after marking the rebuild of a dropped database leaves a build the next writer finishes equal to a fresh build", async () => {
    await appendExamples(store);
    let last = await appendScenario(store);
    const db = freshDb();
    let armed = false,
      refuse = false;
    const first = await start(
      // The build marker is the one document written with replaceOne (checkpoint-store.ts beginBuild).
      afterCheckpointWrite(db, "replaceOne", () => (refuse = armed)),
      () => !refuse,
    );
    await first.waitFor(last);
    // The database is dropped under the live writer, which goes on writing the new events into it:
    // a checkpoint near the stream's end over collections that hold only those events.
    await db.dropDatabase();
    for (let i = 0; i < 4; i++) last = await appendExamples(store);
    await first.waitFor(last, 30_000);
    expect(await isBuilt(readModelDb(db), PROJECTION_NAME)).toBe(false);
    armed = true;
    // Its rebuild marks the build, then the writer stops (its lease lost; a SIGKILL leaves the same).
    const rebuilding = first.rebuild();
    rebuilding.catch(() => undefined);
    await eventually("the build marked", async () => (refuse ? true : undefined), 30_000);
    await first.stop();
    await expect(rebuilding).rejects.toThrow(/not writing/);
    expect((await readModelDb(db).checkpoints.findOne({ _id: PROJECTION_NAME }))?.seq).toBe(0);

    const next = await start(db);
    expect(next.position).toBe(last);
    expect(await isBuilt(readModelDb(db), PROJECTION_NAME)).toBe(true);
    const fresh = freshDb();
    await (await start(fresh)).waitFor(last, 60_000);
    expect(await dumpReadModels(db)).toEqual(await dumpReadModels(fresh));
  }, 120_000);

  it("a writer whose lease is lost half-way through a rebuild writes nothing more (rows, checkpoint, marker) and stops at once", async () => {
    let last = await appendScenario(store);
    for (let i = 0; i < 10; i++) last = await appendExamples(store);
    const db = freshDb();
    const m = readModelDb(db);
    let holding = true,
      armed = false;
    // The lease is lost right after the rebuild saved its first checkpoint short of the end: a
    // rebuild half-way, without racing a poll against a rebuild that may take 100 ms.
    const halfway = (args: unknown[]) => {
      const [filter, update] = args as [{ _id?: string }, { $set?: { seq?: number } }];
      const seq = update?.$set?.seq ?? 0;
      if (armed && filter?._id === PROJECTION_NAME && seq > 0 && seq < last) holding = false;
    };
    const writer = await start(afterCheckpointWrite(db, "updateOne", halfway), () => holding);
    await writer.waitFor(last);
    armed = true;
    const rebuilding = writer.rebuild();
    rebuilding.catch(() => undefined);
    await eventually("the lease lost half-way", async () => (holding ? undefined : true), 30_000);
    // A batch already past the guard may still land; nothing after it.
    await new Promise((r) => setTimeout(r, 500));
    const state = async () => ({
      rows: await dumpReadModels(db),
      checkpoints: await m.checkpoints.find().sort({ _id: 1 }).toArray(),
    });
    const after = await state();
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await state()).toEqual(after);
    expect(after.rows.ledger!.length).toBeGreaterThan(0);
    expect(after.checkpoints.find((c) => c._id === markerId(PROJECTION_NAME))).toMatchObject({ state: "building" });
    // Stopping does not replay the rest of the stream: the rebuild ends at its next refused write.
    const t = Date.now();
    await writer.stop();
    expect(Date.now() - t).toBeLessThan(5_000);
    await expect(rebuilding).rejects.toThrow(/not writing/);
  }, 120_000);
});
