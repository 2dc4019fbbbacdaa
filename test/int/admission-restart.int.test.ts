import { createHash } from "node:crypto";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { DroverConfig, runtimePrefixOf, sizingOf, tenantSettingsOf, type DroverEvent } from "../../contracts/index.ts";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { RunIndex, startAdmission, type AdmissionService } from "../../services/admission/index.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { randomIds, systemClock, type EnvelopeContext } from "../../platform/envelope.ts";
import { looseEvent } from "../support/loose-event.ts";
import { redisReservations } from "../../platform/reservations.ts";
import { createEventStore, runRef, scaleOutRef, type EventStore } from "../../streams/index.ts";
import { exampleDag } from "../support/example-events.ts";
import { uniqueName } from "../support/isolation.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * Admission restarted on a long log (issue 23), against a real nats-server and Redis: no decision
 * before the run index caught up, a scale-out conflict read rather than assumed (a run never waits
 * on a request that ended), and the liveness guard that re-plans a stalled queue from the log. No
 * runtime exists here: every run stays queued, which is exactly where the bug lived.
 */
const CP = "cp-restart";
const config = DroverConfig.parse({
  controlPlaneId: CP,
  heartbeatIntervalMs: 300,
  dispatchTimeoutMs: 500,
  queueStallMs: 1000,
  tenants: [
    { tenantId: "t-blue", isolationMode: "dedicated", maxRuntimeInstances: 4 },
    { tenantId: "t-red", isolationMode: "dedicated" },
  ],
});
const KEY = `${CP}:t-blue:${runtimePrefixOf(tenantSettingsOf(config, "t-blue"))}:no-visible-capacity`;
const idOf = (generation: number) =>
  `so-${createHash("sha256").update(`${KEY}:${generation}`).digest("hex").slice(0, 24)}`;
const producer: EnvelopeContext = {
  writer: { service: "api", instanceId: "api-1" },
  clock: systemClock,
  ids: randomIds,
};
const provisioner: EnvelopeContext = {
  writer: { service: "provisioner", instanceId: "prov-1" },
  clock: systemClock,
  ids: randomIds,
};

describe("admission restarted on a long log (real NATS + Redis; no runtime: runs stay queued)", () => {
  let fx: StreamsFixture, js: JetStreamClient, store: EventStore, redis: Redis;
  let services: AdmissionService[] = [];
  /** Appends admission attempted, each marked with whether its service had reported caught up. */
  let appends: { caughtUp: boolean }[] = [];

  async function start(index = new RunIndex(fx.layout.eventPrefix, () => undefined, systemClock)) {
    let caughtUp = false;
    const record = <A extends unknown[], R>(f: (...a: A) => Promise<R>) => {
      return (...a: A) => {
        appends.push({ caughtUp });
        return f(...a);
      };
    };
    // The real store; the wrapper only notes when admission calls it.
    const watched: EventStore = {
      ...store,
      append: record(store.append.bind(store)),
      appendAll: record(store.appendAll.bind(store)),
      appendAtomic: record(store.appendAtomic.bind(store)),
    };
    const s = await startAdmission({
      js,
      config,
      layout: fx.layout,
      store: watched,
      index,
      view: redisCapacityView<CapacityDescriptor>(redis, CP),
      reservations: redisReservations(redis, CP),
      env: { writer: { service: "admission", instanceId: uniqueName("adm") }, clock: systemClock, ids: randomIds },
      send: () => Promise.reject(new Error("no runtime in this test")),
      commandTokenFor: () => "token",
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: pino({ level: "silent" }),
      onQueueStalled: (tenant) => stalls.push(tenant),
      tickMs: 50,
    });
    void s.ready.then(() => (caughtUp = true));
    services.push(s);
    return { service: s, index };
  }

  const stalls: string[] = [];
  const submit = (tenantId: string, id: string) =>
    store.append(
      runRef(tenantId, id),
      looseEvent(
        producer,
        "run.submitted",
        { sharedRunId: id, dag: exampleDag, source: "api", labels: {} },
        { tenantId, correlationId: id, causationId: "test" },
      ),
      { expectedSeq: 0 },
    );

  /** A request of t-blue's key that was requested, observed and fulfilled (an earlier start's history). */
  async function endedRequest(generation: number) {
    const requestId = idOf(generation);
    const mk = (type: DroverEvent["type"], data: unknown, ctx: EnvelopeContext) =>
      looseEvent(ctx, type, data, { tenantId: "t-blue", correlationId: requestId, causationId: "earlier-start" });
    const requested = mk(
      "scaleout.requested",
      {
        requestId,
        controlPlaneId: CP,
        dedupeKey: KEY,
        reason: { code: "no-visible-capacity", detail: "" },
        policy: {
          isolationMode: "dedicated",
          allowSharedFallback: false,
          runtimeInstanceIdPrefix: runtimePrefixOf(tenantSettingsOf(config, "t-blue")),
          maxRuntimeInstances: 4,
        },
        sizing: sizingOf(tenantSettingsOf(config, "t-blue")),
        providerHint: "process",
        transport: "http",
        expiresAt: new Date(Date.now() + 120_000).toISOString(),
      },
      { writer: { service: "admission", instanceId: "adm-earlier" }, clock: systemClock, ids: randomIds },
    );
    await store.appendAll(
      scaleOutRef("t-blue", requestId),
      [
        requested,
        mk("scaleout.observed", { provisionerInstanceId: "prov-1" }, provisioner),
        mk("scaleout.fulfilled", { runtimeInstanceId: `rt-earlier-${generation}` }, provisioner),
      ],
      { expectedSeq: 0 },
    );
  }

  /** `count` terminal runs of t-red (submitted, rejected): history admission must fold and never act on. */
  async function filler(count: number) {
    const batch = 250;
    for (let i = 0; i < count; i += batch) {
      await Promise.all(
        Array.from({ length: Math.min(batch, count - i) }, (_, j) => {
          const id = `run-old-${i + j}`;
          const mk = (type: DroverEvent["type"], data: unknown) =>
            looseEvent(producer, type, data, { tenantId: "t-red", correlationId: id, causationId: "earlier-start" });
          return store.appendAll(
            runRef("t-red", id),
            [
              mk("run.submitted", { sharedRunId: id, dag: exampleDag, source: "api", labels: {} }),
              mk("run.rejected", { reason: { code: "tenant-quota-exceeded", detail: "earlier start" } }),
            ],
            { expectedSeq: 0 },
          );
        }),
      );
    }
  }

  const runEvents = async (tenantId: string, id: string) => (await store.read(runRef(tenantId, id))).events;
  const waitsOn = async (tenantId: string, id: string): Promise<string | undefined> => {
    const asked = (await runEvents(tenantId, id)).flatMap((e) =>
      e.event.type === "run.scale-out-requested" ? [e.event.data.requestId] : [],
    );
    return asked.at(-1);
  };
  const requestTypes = async (requestId: string) =>
    (await store.read(scaleOutRef("t-blue", requestId))).events.map((e) => e.event.type);

  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "adr");
    js = jetstream(fx.nc);
    store = createEventStore(fx.nc, fx.layout);
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1, db: 8 });
    await redis.flushdb();
    services = [];
    appends = [];
  });
  afterEach(async () => {
    for (const s of services) await s.stop();
    redis.disconnect();
    await fx.close();
  });

  it("never leaves a run waiting on a request that ended: a conflict on the next generation is read, and a generation the log already holds is skipped", async () => {
    // History with a gap (generation 1 ended; 0 never existed): counting requests says "generation 1".
    await endedRequest(1);
    await start();
    await submit("t-blue", "run-1");
    const requestId = await eventually("run-1 waits on a request", () => waitsOn("t-blue", "run-1"));
    expect(requestId).not.toBe(idOf(1));
    expect(requestId).toBe(idOf(2));
    expect(await requestTypes(requestId)).toEqual(["scaleout.requested"]);
    expect(await requestTypes(idOf(1))).toEqual(["scaleout.requested", "scaleout.observed", "scaleout.fulfilled"]);
  });

  it("appends nothing before its index caught up, even when stopped and restarted mid-replay again and again, and then asks for exactly one new scale-out", async () => {
    await submit("t-blue", "run-early"); // pending from the first sequence on: a pass mid-replay would act on it
    await filler(10_000); // 20 000 events to replay
    for (let g = 0; g < 3; g++) await endedRequest(g);
    const lastSeq = (await store.read(scaleOutRef("t-blue", idOf(2)))).lastSeq; // the log's last event
    // Each restart is stopped once its index folded a given share of the log (1/8 … 5/8): inside the
    // replay whatever the machine's speed (fixed delays were not, on a faster or busier machine; the
    // follower folds in batches of up to ~2 500 events here, so the last share leaves ~7 500 spare).
    const shareOf = (i: number) => Math.floor((lastSeq * (i + 1)) / 8);
    const stoppedAt: { folded: number; ready: boolean }[] = [];
    for (let i = 0; i < 5; i++) {
      const { service, index } = await start();
      let ready = false;
      void service.ready.then(() => (ready = true));
      const deadline = Date.now() + 20_000;
      while (index.foldedSeq < shareOf(i) && !ready && Date.now() < deadline)
        await new Promise((ok) => setImmediate(ok));
      stoppedAt.push({ folded: index.foldedSeq, ready });
      await service.stop();
    }
    const { service } = await start();
    await service.ready;
    const requestId = await eventually("run-early waits on a request", () => waitsOn("t-blue", "run-early"), 20_000);
    expect(appends.length).toBeGreaterThan(0);
    expect(appends.filter((a) => !a.caughtUp)).toEqual([]);
    // Three generations ended (after the fulfilled grace, whose runtimes never became routable): the
    // request made is the fourth, and it is the only new one.
    expect(requestId).toBe(idOf(3));
    expect(await requestTypes(requestId)).toEqual(["scaleout.requested"]);
    const requested: string[] = [];
    await store.replay(
      { seq: 1 },
      (e) => {
        if (e.event.type === "scaleout.requested" && e.event.writer.service === "admission")
          requested.push(e.event.data.requestId);
      },
      { filter: `${fx.layout.eventPrefix}.scaleout.>` },
    );
    expect(requested).toEqual([idOf(0), idOf(1), idOf(2), idOf(3)]);
    // Every restart was stopped inside its replay, after folding its share (else the checks above prove less than they say).
    for (const [i, at] of stoppedAt.entries()) {
      expect(at.ready, `restart ${i} was ready when stopped`).toBe(false);
      expect(at.folded, `restart ${i} folded`).toBeGreaterThanOrEqual(shareOf(i));
      expect(at.folded, `restart ${i} folded`).toBeLessThan(lastSeq);
    }
  }, 90_000);

  it("re-plans a queue stalled on a request the index wrongly holds open past its expiry, and says so on the run (queue-stalled)", async () => {
    const { index } = await start();
    await submit("t-blue", "run-s");
    const first = await eventually("run-s waits on a request", () => waitsOn("t-blue", "run-s"));
    expect(first).toBe(idOf(0));
    // The provisioner fulfils it, but a diverged index (the old bug) still holds it open, past its expiry.
    const mk = (type: DroverEvent["type"], data: unknown) =>
      looseEvent(provisioner, type, data, { tenantId: "t-blue", correlationId: first, causationId: "test" });
    await store.appendAll(
      scaleOutRef("t-blue", first),
      [
        mk("scaleout.observed", { provisionerInstanceId: "prov-1" }),
        mk("scaleout.fulfilled", { runtimeInstanceId: "rt-x" }),
      ],
      { expectedSeq: (await store.read(scaleOutRef("t-blue", first))).lastSeq },
    );
    await eventually("index folded the fulfilment", async () =>
      index.scaleOuts.get(first)?.status === "fulfilled" ? true : undefined,
    );
    // What the old code left behind: the entry overwritten with a bare "requested" (issue 23).
    index.scaleOuts.set(first, {
      tenantId: "t-blue",
      requestId: first,
      dedupeKey: KEY,
      status: "requested",
      expiresMs: Date.now() - 1,
      lastSeq: 0,
    });
    const stalled = await eventually("run-s is queue-stalled", async () =>
      (await runEvents("t-blue", "run-s")).find(
        (e) => e.event.type === "run.queued-globally" && e.event.data.reason.code === "queue-stalled",
      ),
    );
    expect(stalled.event.type === "run.queued-globally" && stalled.event.data.reason.detail).toMatch(
      /re-planned from the log/,
    );
    expect(stalls).toContain("t-blue"); // what the drover_queue_stalled_total metric counts
    const next = await eventually("run-s waits on a new request", async () => {
      const id = await waitsOn("t-blue", "run-s");
      return id !== first ? id : undefined;
    });
    expect(next).toBe(idOf(1));
    expect(index.scaleOuts.get(first)?.status).toBe("fulfilled");
    expect(await requestTypes(next)).toEqual(["scaleout.requested"]);
  });
});
