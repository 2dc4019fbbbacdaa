import type { Db, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { LEDGER_PAGE_SIZE, type LedgerRow } from "../../contracts/read-models.ts";
import { StepId } from "../../contracts/index.ts";
import { readModelClient } from "../../platform/read-model-db.ts";
import { mongoReadModels } from "../../services/api/index.ts";
import { startForensics, type ForensicsService } from "../../services/forensics/index.ts";
import { execRef } from "../../streams/subjects.ts";
import { apiFixture, auth, type ApiFixture } from "../support/api-app.ts";
import { appendScenario, scenario as s } from "../support/forensics-scenario.ts";
import { uniqueName } from "../support/isolation.ts";
import { event } from "../support/streams.ts";

// More than two pages of one tenant's routine rows, interleaved with another tenant's.
const ACME_STEPS = 3 * LEDGER_PAGE_SIZE + 37;

describe("the ledger read from per-tenant pages against real FerretDB and a real nats-server", () => {
  let mongo: MongoClient;
  let db: Db;
  let fx: ApiFixture;
  let projector: ForensicsService;
  let last: number;
  beforeAll(async () => {
    mongo = readModelClient(inject("mongoUrl"));
    db = mongo.db(uniqueName("ledgerpg"));
    fx = await apiFixture(inject("natsUrl"), { readModels: mongoReadModels(db) });
    last = await appendScenario(fx.store);
    const writer = { service: "runtime" as const, instanceId: "rt", runtimeInstanceId: s.replacement, epoch: 1 };
    for (let i = 0; i < ACME_STEPS; i++) {
      const [tenantId, executionId] = i % 4 === 3 ? [s.globex, s.globexExec] : [s.acme, s.acmeExec];
      const ref = execRef(tenantId, executionId);
      const e = event("exec.step-completed");
      last = (
        await fx.store.append(
          ref,
          { ...e, tenantId, writer, data: { ...e.data, stepId: StepId.parse(`s${i}`) } },
          { expectedSeq: await fx.store.lastSeq(ref) },
        )
      ).seq;
    }
    projector = await startForensics({ handle: fx.nc, layout: fx.layout, db });
    await projector.waitFor(last);
  }, 120_000);
  afterAll(async () => {
    await projector.stop();
    await db.dropDatabase();
    await mongo.close();
    await fx.close();
  });

  // What the ledger answered before the pages: the tenant's rows after `since`, in stream order, from `ledger` itself.
  const fromRows = (tenantId: string, since: number, limit: number, recovery?: boolean) =>
    db
      .collection<LedgerRow>("ledger")
      .find({ tenantId, seq: { $gt: since }, ...(recovery === undefined ? {} : { recovery }) })
      .sort({ seq: 1 })
      .limit(limit)
      .toArray();

  it("answers exactly the rows the ledger collection holds for every since, limit and recovery filter", async () => {
    const rm = mongoReadModels(db);
    const all = await fromRows(s.acme, 0, 5000);
    expect(all.length).toBeGreaterThan(2 * LEDGER_PAGE_SIZE);
    const sinces = [0, all[0]!.seq, all[LEDGER_PAGE_SIZE - 1]!.seq, all[LEDGER_PAGE_SIZE]!.seq, all.at(-2)!.seq, last];
    for (const tenantId of [s.acme, s.globex])
      for (const since of sinces)
        for (const limit of [1, 7, LEDGER_PAGE_SIZE, 2 * LEDGER_PAGE_SIZE + 1, 5000])
          for (const recovery of [undefined, true, false])
            expect(
              (await rm.ledger(tenantId, { since, limit, ...(recovery === undefined ? {} : { recovery }) })).map(
                (r) => r._id,
              ),
              `${tenantId} since ${since} limit ${limit} recovery ${recovery}`,
            ).toEqual((await fromRows(tenantId, since, limit, recovery)).map((r) => r._id));
    expect(await db.collection("ledger_pages").countDocuments({ tenantId: s.acme, view: "routine" })).toBe(
      Math.ceil(
        (await db.collection("ledger").countDocuments({ tenantId: s.acme, recovery: false })) / LEDGER_PAGE_SIZE,
      ),
    );
  });

  it("answers a run's timeline rows (the run's and its executions') from the run's pages exactly as the ledger collection's $or does", async () => {
    const rm = mongoReadModels(db);
    for (const [tenantId, sharedRunId] of [
      [s.acme, s.acmeRun],
      [s.globex, s.globexRun],
    ] as const) {
      const run = (await rm.run(tenantId, sharedRunId))!;
      const want = await db
        .collection<LedgerRow>("ledger")
        .find({ tenantId, $or: [{ sharedRunId }, { executionId: { $in: [...run.executionIds] } }] })
        .sort({ seq: 1 })
        .toArray();
      expect(want.length).toBeGreaterThan(10);
      const got = await rm.runLedger(tenantId, sharedRunId, run.executionIds);
      expect(got.map((r) => r._id)).toEqual(want.map((r) => r._id));
      // Another tenant asking for the same run gets nothing.
      expect(await rm.runLedger(tenantId === s.acme ? s.globex : s.acme, sharedRunId, run.executionIds)).toEqual([]);
    }
  });

  it("walks GET /v1/ledger by `next` through every page once, each tenant its own rows only", async () => {
    for (const [who, tenantId] of [
      ["acme", s.acme],
      ["globex", s.globex],
    ] as const) {
      const seen: number[] = [];
      let since = 0;
      for (;;) {
        const res = await fx.app.inject({ url: `/v1/ledger?since=${since}&limit=45`, headers: auth(who) });
        expect(res.statusCode).toBe(200);
        const body = res.json() as { tenantId: string; entries: { seq: number; tenantId: string }[]; next: number };
        expect(body.entries.every((e) => e.tenantId === tenantId)).toBe(true);
        if (body.entries.length === 0) {
          expect(body.next).toBe(since);
          break;
        }
        seen.push(...body.entries.map((e) => e.seq));
        since = body.next;
      }
      expect(seen).toEqual((await fromRows(tenantId, 0, 5000)).map((r) => r.seq));
    }
  });
});
