import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import type { Db, MongoClient } from "mongodb";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { ledgerRowsOf, READ_MODEL_COLLECTIONS, type StoredLedgerChunk } from "../../contracts/read-models.ts";
import { controlSubject, readModelClient } from "../../platform/read-model-db.ts";
import { mongoReadModels } from "../../services/api/index.ts";
import {
  isBuilt,
  markerId,
  ensureIndexes,
  readModelDb,
  serveRebuild,
  forensicsProjection,
  PROJECTION_NAME,
  startForensics,
  type RebuildReply,
  type ForensicsService,
} from "../../services/forensics/index.ts";
import { createEventStore } from "../../streams/event-store.ts";
import { execRef } from "../../streams/subjects.ts";
import type { EventStore, StoredEvent } from "../../streams/types.ts";
import { acmeForensicsId, appendExamples, appendScenario, scenario as s } from "../support/forensics-scenario.ts";
import { uniqueName } from "../support/isolation.ts";
import { describeDifference, dumpReadModels } from "../support/read-model-dump.ts";
import { event, eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * The read models of `a` equal those of `b`, compared a collection at a time so a failure names the
 * collection and its first differing document (with a ledger row's chunks): the runner's own diff of
 * thousands of rows is cut short and can read "no visual difference".
 */
async function expectSameReadModels(a: Db, b: Db): Promise<void> {
  const [da, db] = [await dumpReadModels(a), await dumpReadModels(b)];
  for (const c of READ_MODEL_COLLECTIONS) {
    const why = await describeDifference(c, { db: a, docs: da[c]! }, { db: b, docs: db[c]! });
    expect(da[c], `read-model collection ${c}${why ? `: ${why}` : ""}`).toEqual(db[c]);
  }
}

/** What the API would answer for the scenario's tenants and incident. */
async function queries(db: Db) {
  const rm = mongoReadModels(db);
  return {
    acmeLedger: await rm.ledger(s.acme, { since: 0, limit: 5000 }),
    globexLedger: await rm.ledger(s.globex, { since: 0, limit: 5000 }),
    acmeForensics: await rm.forensics(s.acme, { incidentId: s.incident, limit: 5000 }),
    incident: await rm.incident(s.incident),
    run: await rm.run(s.acme, s.acmeRun),
    position: await rm.position(),
  };
}

describe("forensics projector against real FerretDB and a real nats-server", () => {
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
    fx = await freshStreams(inject("natsUrl"), "fx");
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
    const db = mongo.db(uniqueName("fx"));
    dbs.push(db);
    return db;
  };
  const start = async (db: Db, watchdogMs = 0) => {
    const svc = await startForensics({ handle: fx.nc, layout: fx.layout, db, watchdogMs });
    services.push(svc);
    return svc;
  };
  const seed = async () => {
    await appendExamples(store);
    return appendScenario(store);
  };

  it("applies every event twice, and again newest-first, into the same documents (idempotent by stream sequence) against real FerretDB", async () => {
    await seed();
    // Free text FerretDB documents as unsupported (NUL) is stored sanitised.
    const failed = event("exec.step-failed");
    await store.append(
      execRef(s.acme, s.acmeExec),
      { ...failed, tenantId: s.acme, data: { ...failed.data, error: "bad\u0000byte" } },
      { expectedSeq: await store.lastSeq(execRef(s.acme, s.acmeExec)) },
    );
    const events: StoredEvent[] = [];
    await store.replay({ seq: 1 }, (e) => {
      events.push(e);
    });
    const db = freshDb();
    const m = readModelDb(db);
    await ensureIndexes(m);
    const p = forensicsProjection(m, fx.layout);
    for (const e of events) await p.apply(e);
    const once = await dumpReadModels(db);
    for (const e of events) await p.apply(e);
    expect(await dumpReadModels(db)).toEqual(once);
    // A projector that remembers nothing (a restart) reads what is stored: older facts never
    // overwrite newer documents, and rows are rewritten identically.
    const cold = forensicsProjection(m, fx.layout);
    for (const e of [...events].reverse()) await cold.apply(e);
    expect(await dumpReadModels(db)).toEqual(once);
    // One ledger row per event, except the shared runtime's registered/suspected/fenced: it has no owner tenant.
    expect(once.ledger).toHaveLength(events.length - 3);
    expect(once.forensics).toHaveLength(events.filter((e) => e.event.type.startsWith("forensics.")).length);
    expect(
      once.ledger!.find(
        (r) => (r as { type: string }).type === "exec.step-failed" && (r as { tenantId: string }).tenantId === s.acme,
      ),
    ).toMatchObject({ detail: { error: "bad\uFFFDbyte" } });
  });

  it("rebuilds from sequence 1 into exactly the read models it built live, collection by collection, against real FerretDB", async () => {
    const live = await start(freshDb());
    const last = await seed();
    await live.waitFor(last);
    const liveDb = dbs[0]!;
    const rebuiltDb = freshDb();
    const rebuilt = await start(rebuiltDb);
    expect(rebuilt.position).toBe(last);
    await expectSameReadModels(rebuiltDb, liveDb);
    // A rebuild in place of the live projector converges on the same documents, and it keeps following.
    expect(await live.rebuild()).toBe(last);
    await expectSameReadModels(liveDb, rebuiltDb);
    expect(await queries(liveDb)).toEqual(await queries(rebuiltDb));
  });

  it("rebuilds a dropped database on a NATS rebuild request and on its own, with equal query results, against real FerretDB", async () => {
    const db = freshDb();
    const svc = await start(db, 100);
    const last = await seed();
    await svc.waitFor(last);
    const before = await queries(db);
    expect(before.position).toBeGreaterThan(0);
    const subject = controlSubject(fx.layout, "cp-test", "forensics", "rebuild");
    const sub = serveRebuild(fx.nc, subject, svc);
    try {
      await db.dropDatabase();
      const reply = (await fx.nc.request(subject, "", { timeout: 30_000 })).json<RebuildReply>();
      expect(reply).toEqual({ ok: true, position: last });
      expect(await queries(db)).toEqual({ ...before, position: last });
      // Dropped again with nobody asking: the watchdog sees the build marker gone and rebuilds.
      await db.dropDatabase();
      await eventually(
        "the watchdog's rebuild",
        async () => ((await isBuilt(readModelDb(db), PROJECTION_NAME)) ? true : undefined),
        20_000,
      );
      expect(await queries(db)).toEqual({ ...before, position: last });
    } finally {
      sub.unsubscribe();
    }
  });

  it("a database dropped while the projector is writing is noticed by the watchdog and rebuilt into exactly what a fresh build gives, against real FerretDB", async () => {
    const db = freshDb();
    const svc = await start(db, 200);
    let last = await seed();
    await svc.waitFor(last);
    const writing = (async () => {
      for (let i = 0; i < 12; i++) last = await appendExamples(store);
    })();
    await new Promise((r) => setTimeout(r, 400));
    await db.dropDatabase();
    await writing;
    await eventually(
      "the watchdog's rebuild, caught up",
      async () => (svc.position >= last && (await isBuilt(readModelDb(db), PROJECTION_NAME)) ? true : undefined),
      60_000,
    );
    const fresh = freshDb();
    const reference = await start(fresh);
    await reference.waitFor(last, 60_000);
    await expectSameReadModels(db, fresh);
  });

  it("a database dropped half-way through a build from sequence 1 is built again, never marked built with the rows before the drop missing, against real FerretDB", async () => {
    let last = await seed();
    // More events than the replay buffers ahead of the blocked write (below), so the close interrupts it.
    for (let i = 0; i < 40; i++) last = await appendExamples(store);
    const db = freshDb();
    const m = readModelDb(db);
    const starting = start(db, 200);
    // Drop once the build has checkpointed part of the stream, not all of it.
    await eventually(
      "a build half-way",
      async () => {
        const [marker, cp] = [
          await m.checkpoints.findOne({ _id: markerId(PROJECTION_NAME) }),
          await m.checkpoints.findOne({ _id: PROJECTION_NAME }),
        ];
        return marker?.state === "building" && (cp?.seq ?? 0) > 0 && (cp?.seq ?? 0) < last ? true : undefined;
      },
      30_000,
    );
    await db.dropDatabase();
    const svc = await starting;
    await eventually(
      "built and caught up",
      async () => (svc.position >= last && (await isBuilt(m, PROJECTION_NAME)) ? true : undefined),
      60_000,
    );
    const fresh = freshDb();
    await (await start(fresh)).waitFor(last, 60_000);
    await expectSameReadModels(db, fresh);
  });

  it("a build from sequence 1 interrupted by a stop goes on from its checkpoint at the next start, not from sequence 1, and ends equal to a clean build, against real FerretDB", async () => {
    let last = await seed();
    // More events than the replay buffers ahead of the blocked write (below), so the close interrupts it.
    for (let i = 0; i < 40; i++) last = await appendExamples(store);
    const db = freshDb();
    const m = readModelDb(db);
    // The first process's own connection: closing it is what a SIGTERM during the build does.
    const own = await connectHarness({ servers: inject("natsUrl") });
    // The build's second ledger write waits until the connection is closed, so the close always
    // lands half-way (a build of these few events used to outrun the test's close).
    let open!: () => void;
    const closed = new Promise<void>((r) => (open = r));
    let ledgerWrites = 0;
    const gated = new Proxy(db, {
      get(target, prop) {
        if (prop !== "collection") return Reflect.get(target, prop, target) as unknown;
        return (name: string) => {
          const c = target.collection(name);
          if (name !== "ledger") return c;
          return new Proxy(c, {
            get(ct, p) {
              const v = Reflect.get(ct, p, ct) as unknown;
              if (p !== "insertMany" || typeof v !== "function") return typeof v === "function" ? v.bind(ct) : v;
              return async (...args: unknown[]) => {
                if (ledgerWrites++ > 0) await closed;
                return (v as (...a: unknown[]) => unknown).apply(ct, args);
              };
            },
          });
        };
      },
    });
    const interrupted = startForensics({ handle: own, layout: fx.layout, db: gated, watchdogMs: 0 });
    const cp = await eventually(
      "a build half-way",
      async () => {
        const [marker, c] = [
          await m.checkpoints.findOne({ _id: markerId(PROJECTION_NAME) }),
          await m.checkpoints.findOne({ _id: PROJECTION_NAME }),
        ];
        return marker?.state === "building" && (c?.seq ?? 0) > 0 && (c?.seq ?? 0) < last ? c!.seq : undefined;
      },
      30_000,
    );
    await own.close();
    open();
    await expect(interrupted).rejects.toThrow();
    expect((await m.checkpoints.findOne({ _id: markerId(PROJECTION_NAME) }))?.state).toBe("building");
    const ledger = db.collection<StoredLedgerChunk & { marked?: string }>("ledger");
    // Rows the build wrote before its checkpoint: a build from sequence 1 would drop and rewrite them.
    const probe = (await ledger.find().toArray()).find((c) => ledgerRowsOf(c).at(-1)!.seq <= cp)!;
    await ledger.updateOne({ _id: probe._id }, { $set: { marked: "by the test" } });

    const svc = await start(db);
    expect(svc.position).toBe(last);
    expect(await isBuilt(m, PROJECTION_NAME)).toBe(true);
    expect((await ledger.findOne({ _id: probe._id }))?.marked).toBe("by the test");
    await ledger.updateOne({ _id: probe._id }, { $unset: { marked: "" } });
    const clean = freshDb();
    await (await start(clean)).waitFor(last, 60_000);
    await expectSameReadModels(db, clean);
  });

  it("resumes from its checkpoint after a restart without re-applying, and re-applies harmlessly after a lost checkpoint, against real FerretDB", async () => {
    const db = freshDb();
    const first = await start(db);
    const last = await appendScenario(store);
    await first.waitFor(last);
    await first.stop();
    // A row the restarted projector would rewrite if it re-applied old events.
    const ledger = db.collection<StoredLedgerChunk & { marked?: string }>("ledger");
    const probe = (await ledger.findOne({ tenantId: s.globex }))!;
    expect((await ledger.updateOne({ _id: probe._id }, { $set: { marked: "by the test" } })).matchedCount).toBe(1);
    // Every copy of the row of stream sequence `seq`, whatever chunk holds it.
    const copies = async (seq: number) =>
      (await ledger.find().toArray()).flatMap(ledgerRowsOf).filter((r) => r.seq === seq).length;

    const second = await start(db);
    expect(second.position).toBe(last);
    const last2 = await appendExamples(store);
    await second.waitFor(last2);
    expect((await ledger.findOne({ _id: probe._id }))?.marked).toBe("by the test");
    expect(await copies(last2)).toBe(1);
    await second.stop();

    // The checkpoint lost (a crash before its save): everything is applied again, to the same documents as a clean build.
    await ledger.updateOne({ _id: probe._id }, { $unset: { marked: "" } });
    await db
      .collection<{ _id: string; seq: number }>("checkpoints")
      .updateOne({ _id: PROJECTION_NAME }, { $set: { seq: 0 } });
    const third = await start(db);
    expect(third.position).toBe(last2);
    const clean = freshDb();
    await start(clean);
    await expectSameReadModels(db, clean);
    expect((await queries(db)).acmeForensics.map((r) => r.forensicsId)).toEqual(Array(3).fill(acmeForensicsId));
  });
});
