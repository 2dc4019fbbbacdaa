import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Db, MongoClient } from "mongodb";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { main } from "../../cli/drover.ts";
import { archiveStreamOf, readArchived, readRaw } from "../../platform/archive-store.ts";
import { compactRun, type CompactorDeps } from "../../platform/compactor/compact-run.ts";
import { forensicsProjectedThrough } from "../../platform/compactor/read-model-position.ts";
import { credentialOf } from "../../platform/nats-auth/credentials.ts";
import { connectHarness, serverKeysOf } from "../../platform/nats-auth/server-keys.ts";
import { connectNats } from "../../platform/nats-connect.ts";
import { setupNats } from "../../platform/nats-setup.ts";
import { outputsStreamOf } from "../../platform/output-store.ts";
import { readModelClient } from "../../platform/read-model-db.ts";
import { stepCacheStreamOf } from "../../platform/step-cache-store.ts";
import { mongoReadModels } from "../../services/api/index.ts";
import { startForensics } from "../../services/forensics/index.ts";
import {
  createEventStore,
  ensureStreams,
  runRef,
  taggedLayout,
  type EventStore,
  type StreamLayout,
} from "../../streams/index.ts";
import { appendScenario, scenario as s } from "../support/forensics-scenario.ts";
import { uniqueName } from "../support/isolation.ts";
import { event } from "../support/streams.ts";

/**
 * Retention of the event stream (docs/retention.md) against a real nats-server with authentication
 * and real FerretDB: the compactor, as its own `compactor` identity, removes a run finished before
 * the retention window after archiving it, keeps its read-model rows, and never removes a live run
 * or a run that changed after it was archived.
 */
const RETENTION_MS = 60_000;
const url = () => inject("natsUrl");

describe("compaction of finished runs (real nats-server + FerretDB)", () => {
  let mongo: MongoClient;
  let harness: NatsConnection;
  let compactor: NatsConnection;
  let jsm: JetStreamManager;
  let layout: StreamLayout;
  let store: EventStore;
  let db: Db;
  let lastSeq: number;
  let tag: string;
  beforeAll(() => {
    mongo = readModelClient(inject("mongoUrl"));
  });
  afterAll(async () => {
    await mongo.close();
  });
  beforeEach(async () => {
    harness = await connectHarness({ servers: url() });
    jsm = await jetstreamManager(harness);
    tag = uniqueName("cmp");
    layout = taggedLayout(tag);
    await setupNats(jsm, layout, undefined, undefined, true);
    store = createEventStore(harness, layout);
    lastSeq = await appendScenario(store);
    // The read models project the whole scenario, then stop (saving their checkpoint).
    db = mongo.db(uniqueName("cmp"));
    const forensics = await startForensics({ handle: harness, layout, db, watchdogMs: 0 });
    await forensics.waitFor(lastSeq);
    await forensics.stop();
    compactor = await connectNats({ servers: url(), creds: credentialOf(serverKeysOf(url())!, "compactor") });
  });
  afterEach(async () => {
    await compactor.close();
    for (const st of [
      layout.eventStream,
      layout.heartbeatStream,
      layout.deadLetterStream,
      outputsStreamOf(layout),
      stepCacheStreamOf(layout),
      archiveStreamOf(layout),
    ])
      await jsm.streams.delete(st).catch(() => undefined);
    await db.dropDatabase();
    await harness.close();
  });

  /** The compactor's dependencies, as the `compactor` identity, at `now` (default: past the window). */
  const deps = async (o: Partial<CompactorDeps> = {}): Promise<CompactorDeps> => ({
    jsm: await jetstreamManager(compactor),
    js: jetstream(compactor),
    layout,
    retentionMs: RETENTION_MS,
    now: () => Date.now() + RETENTION_MS + 1_000,
    projectedThrough: () => forensicsProjectedThrough(db),
    ...o,
  });
  const globexFilters = () => [
    `${layout.eventPrefix}.run.${s.globex}.${s.globexRun}.>`,
    `${layout.eventPrefix}.exec.${s.globex}.${s.globexExec}.>`,
  ];
  const live = async (filter: string) => readRaw(jsm, layout.eventStream, filter);

  it("removes a run finished before the retention window from the live stream, keeps a complete archive copy, and its summary and ledger rows stay queryable", async () => {
    const rm = mongoReadModels(db);
    const ledgerBefore = await rm.ledger(s.globex, { since: 0, limit: 5000 });
    const before = new Map<string, Awaited<ReturnType<typeof live>>>();
    for (const f of globexFilters()) before.set(f, await live(f));
    const total = [...before.values()].flat().length;
    expect(total).toBeGreaterThanOrEqual(8);
    const acmeBefore = (await live(`${layout.eventPrefix}.*.${s.acme}.>`)).length;

    const out = await compactRun(await deps(), s.globex, s.globexRun);
    expect(out).toMatchObject({ kind: "compacted", messages: total, copied: total });

    for (const [f, msgs] of before) {
      expect(await live(f), `${f} live`).toEqual([]);
      const archived = await readArchived(jsm, layout, f);
      expect(archived.map((a) => [a.origSeq, a.subject, Buffer.from(a.data).toString()])).toEqual(
        msgs.map((m) => [m.seq, m.subject, Buffer.from(m.data).toString()]),
      );
      expect(archived.map((a) => a.time)).toEqual(msgs.map((m) => m.time.toISOString()));
    }
    // Nothing else moved: acme's runs and the runtime's events are all there.
    expect((await live(`${layout.eventPrefix}.*.${s.acme}.>`)).length).toBe(acmeBefore);
    // The read models keep the run's summary and its ledger rows.
    expect(await rm.run(s.globex, s.globexRun)).toMatchObject({ status: "completed" });
    expect(await rm.ledger(s.globex, { since: 0, limit: 5000 })).toEqual(ledgerBefore);
    expect(ledgerBefore.length).toBeGreaterThanOrEqual(total);
    // Again: nothing left to do.
    expect(await compactRun(await deps(), s.globex, s.globexRun)).toMatchObject({ kind: "skipped", skip: "no-events" });
  });

  it("never removes a live run, however old, nor a finished one inside the window or ahead of the read models", async () => {
    const liveRun = runRef(s.acme, "run-live-0001");
    await store.append(liveRun, { ...event("run.submitted"), tenantId: s.acme }, { expectedSeq: 0 });
    const far = await deps({ now: () => Date.now() + 365 * 24 * 3600_000 });
    expect(await compactRun(far, s.acme, "run-live-0001")).toMatchObject({ kind: "skipped", skip: "not-terminal" });
    expect(await live(`${layout.eventPrefix}.run.${s.acme}.run-live-0001.>`)).toHaveLength(1);
    const inside = await compactRun(await deps({ now: () => Date.now() }), s.globex, s.globexRun);
    expect(inside).toMatchObject({ kind: "skipped", skip: "within-retention" });
    const globexLast = Math.max(...(await Promise.all(globexFilters().map(live))).flat().map((m) => m.seq));
    expect(globexLast).toBeLessThan(lastSeq);
    const behind = await compactRun(
      await deps({ projectedThrough: async () => globexLast - 1 }),
      s.globex,
      s.globexRun,
    );
    expect(behind).toMatchObject({ kind: "skipped", skip: "not-projected" });
    for (const f of globexFilters()) expect((await live(f)).length).toBeGreaterThan(0);
  });

  it("does not remove a run that gets a new event between the archive check and the purge (expected last sequence)", async () => {
    const before = (await Promise.all(globexFilters().map(live))).flat().length;
    const ref = runRef(s.globex, s.globexRun);
    const out = await compactRun(
      await deps({
        beforePurge: async () => {
          const e = { ...event("run.cancel-requested"), tenantId: s.globex };
          await store.append(ref, e, { expectedSeq: await store.lastSeq(ref) });
        },
      }),
      s.globex,
      s.globexRun,
    );
    expect(out).toMatchObject({ kind: "skipped", skip: "changed" });
    expect((await Promise.all(globexFilters().map(live))).flat().length).toBe(before + 1);
  });

  it("lets only the compactor purge the event stream: setup and a service are refused, and no one deletes a message", async () => {
    const keys = serverKeysOf(url())!;
    for (const id of ["setup", "api"] as const) {
      const nc = await connectNats({ servers: url(), creds: credentialOf(keys, id) });
      try {
        const other = await jetstreamManager(nc, { checkAPI: false });
        await expect(other.streams.purge(layout.eventStream, { filter: globexFilters()[0]! })).rejects.toThrow(
          /permission|timeout/i,
        );
      } finally {
        await nc.close();
      }
    }
    const c = await jetstreamManager(compactor);
    await expect(c.streams.deleteMessage(layout.eventStream, 1)).rejects.toThrow();
    expect((await live(globexFilters()[0]!)).length).toBeGreaterThan(0);
  });

  it("a service configured for the immutable log refuses a compactable stream; one configured for compaction and the runtime accept it", async () => {
    await expect(ensureStreams(jsm, layout)).rejects.toThrow(/deny_purge: want true, have false/);
    await expect(ensureStreams(jsm, layout, { compactable: true })).resolves.toHaveLength(3);
    await expect(ensureStreams(jsm, layout, { anyPurgePolicy: true })).resolves.toHaveLength(3);
    expect((await jsm.streams.info(layout.eventStream)).config).toMatchObject({ deny_purge: false, deny_delete: true });
  });

  it("leaves an immutable event stream alone (created without DROVER_EVENT_COMPACTION)", async () => {
    const immutable = taggedLayout(uniqueName("cmpimm"));
    await setupNats(jsm, immutable);
    try {
      const out = await compactRun({ ...(await deps()), layout: immutable }, s.globex, s.globexRun);
      expect(out).toMatchObject({ kind: "skipped", skip: "immutable-stream" });
    } finally {
      for (const st of [
        immutable.eventStream,
        immutable.heartbeatStream,
        immutable.deadLetterStream,
        outputsStreamOf(immutable),
        stepCacheStreamOf(immutable),
        archiveStreamOf(immutable),
      ])
        await jsm.streams.delete(st).catch(() => undefined);
    }
  });

  /** `drover admin …` in-process as `identity`, on this test's layout and read models. */
  async function drover(identity: "compactor" | "operator", ...args: string[]) {
    let out = "";
    let err = "";
    const code = await main(["admin", ...args], {
      out: (t) => (out += t),
      err: (t) => (err += t),
      env: {
        NATS_URL: url(),
        NATS_CREDS: credentialOf(serverKeysOf(url())!, identity),
        DROVER_STREAM_TAG: tag,
        MONGO_URL: inject("mongoUrl"),
        DROVER_MONGO_DB: db.databaseName,
      },
    });
    return { code, out, err };
  }

  it("drover admin compact removes every finished run past the window, and drover admin replay of a compacted run gives the same chain and verdict from the archive, saying so", async () => {
    const before = await drover("operator", "replay", "run", s.globexRun, "--tenant", s.globex);
    expect(before.err).toBe("");
    expect(before.out).toContain("run completed by");
    expect((await drover("compactor", "compact", "--retention", "1h")).out).toContain("0 of 0 runs compacted");
    await new Promise((r) => setTimeout(r, 20));
    const compacted = await drover("compactor", "compact", "--retention", "10ms");
    expect(compacted.code).toBe(0);
    expect(compacted.out).toContain(`compacted run ${s.globex}/${s.globexRun}`);
    expect(compacted.out).toContain(`compacted run ${s.acme}/${s.acmeRun}`);
    expect(compacted.out).toContain("2 of 2 runs compacted");
    expect(await live(globexFilters()[0]!)).toEqual([]);
    const after = await drover("operator", "replay", "run", s.globexRun, "--tenant", s.globex);
    expect(after.code).toBe(before.code);
    expect(after.out).toBe(before.out);
    expect(after.err).toMatch(
      new RegExp(
        `run ${s.globexRun} was compacted: \\d+ of its events were read from the archive ${archiveStreamOf(layout)}`,
      ),
    );
    expect(await drover("compactor", "compact", "--retention", "30x")).toMatchObject({ code: 2 });
  });
});
