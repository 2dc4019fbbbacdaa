import { createHash } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { jetstream } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { DroverConfig, type DroverEvent } from "../../contracts/index.ts";
import { redisCapacityView, type CapacityViewStore } from "../../platform/capacity-view.ts";
import { randomIds, systemClock, type EnvelopeContext } from "../../platform/envelope.ts";
import { redisReservations } from "../../platform/reservations.ts";
import { RunIndex, startAdmission, type AdmissionService } from "../../services/admission/index.ts";
import { createEventStore, runRef, type EventStore } from "../../streams/index.ts";
import { exampleDag } from "../support/example-events.ts";
import { uniqueName } from "../support/isolation.ts";
import { looseEvent } from "../support/loose-event.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * Issue 15: an admission pass reads the capacity view (a Redis round trip) only when some run
 * needs a look. Most passes (every tick, and each of a run's admitted, dispatched, started and end)
 * have none. No runtime exists here, so a submitted run is queued globally and looked at every pass.
 */
const CP = "cp-admidle";
const config = DroverConfig.parse({
  controlPlaneId: CP,
  tenants: [{ tenantId: "t-idle", isolationMode: "dedicated" }],
});
const api: EnvelopeContext = { writer: { service: "api", instanceId: "api-1" }, clock: systemClock, ids: randomIds };
const mk = (type: DroverEvent["type"], data: unknown, id: string) =>
  looseEvent(api, type, data, { tenantId: "t-idle", correlationId: id, causationId: "test" });

describe("admission passes with nothing to look at (real NATS + Redis)", () => {
  let fx: StreamsFixture, store: EventStore, redis: Redis, svc: AdmissionService;

  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "admidle");
    store = createEventStore(fx.nc, fx.layout);
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1, db: 6 });
    await redis.flushdb();
  });
  afterEach(async () => {
    await svc?.stop();
    redis.disconnect();
    await fx.close();
  });

  it("idle ticks read no capacity view; a queued run is read for on every pass; once it is cancelled, reads stop", async () => {
    const view = redisCapacityView<CapacityDescriptor>(redis, CP);
    let reads = 0;
    const counted: CapacityViewStore<CapacityDescriptor> = {
      ...view,
      live: () => {
        reads++;
        return view.live();
      },
    };
    // The view with its reservation counts in one script (candidates.ts): a read of the view too.
    const reservations = redisReservations(redis, CP);
    const countedReservations = {
      ...reservations,
      liveWithCounts: (now: number, beatAts: ReadonlyMap<string, number>) => {
        reads++;
        return reservations.liveWithCounts!(now, beatAts);
      },
    };
    const index = new RunIndex(fx.layout.eventPrefix, () => undefined, systemClock);
    svc = await startAdmission({
      js: jetstream(fx.nc),
      config,
      layout: fx.layout,
      store,
      index,
      view: counted,
      reservations: countedReservations,
      env: { writer: { service: "admission", instanceId: uniqueName("adm") }, clock: systemClock, ids: randomIds },
      send: async () => {
        throw new Error("no runtime exists in this test");
      },
      commandTokenFor: () => "token",
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: pino({ level: "silent" }),
      tickMs: 20,
    });
    await svc.ready;
    await delay(300); // some 15 ticks
    await svc.nextPass();
    expect(reads).toBe(0);

    await store.append(
      runRef("t-idle", "run-i1"),
      mk("run.submitted", { sharedRunId: "run-i1", dag: exampleDag, source: "api", labels: {} }, "run-i1"),
      { expectedSeq: 0 },
    );
    await eventually("the run queued globally", async () =>
      index.runs.get("t-idle/run-i1")?.state.status === "queued" ? true : undefined,
    );
    const queued = reads;
    expect(queued).toBeGreaterThan(0);
    await eventually("a queued run read for again by later passes", async () => (reads > queued ? true : undefined));

    const seq = await store.lastSeq(runRef("t-idle", "run-i1"));
    await store.append(
      runRef("t-idle", "run-i1"),
      mk("run.cancel-requested", { by: "tenant:t-idle", reason: "test" }, "run-i1"),
      { expectedSeq: seq },
    );
    await eventually("the run cancelled", async () =>
      index.runs.get("t-idle/run-i1")?.state.status === "cancelled" ? true : undefined,
    );
    await svc.nextPass();
    const ended = reads;
    await delay(300);
    await svc.nextPass();
    expect(reads).toBe(ended);
  });
});
