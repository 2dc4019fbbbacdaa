import { createHash } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { DroverConfig, type DroverEvent } from "../../contracts/index.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { randomIds, systemClock, type EnvelopeContext } from "../../platform/envelope.ts";
import { startOpsServer, type OpsServer } from "../../platform/ops-server.ts";
import { redisReservations } from "../../platform/reservations.ts";
import { registerRunsGauge, RunIndex, startAdmission, type AdmissionService } from "../../services/admission/index.ts";
import { createEventStore, runRef, type EventStore } from "../../streams/index.ts";
import { exampleDag } from "../support/example-events.ts";
import { uniqueName } from "../support/isolation.ts";
import { looseEvent } from "../support/loose-event.ts";
import { sample, scrape } from "../support/scrape.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * `drover_runs{tenant,status}` as Prometheus scrapes it from admission's ops listener, with
 * admission running against a real nats-server and Redis. No runtime exists, so nothing is ever
 * sent to one (the command transport refuses): runs queue globally and a cancel ends them there.
 */
const CP = "cp-admm";
const config = DroverConfig.parse({
  controlPlaneId: CP,
  tenants: [
    { tenantId: "t-blue", isolationMode: "dedicated" },
    { tenantId: "t-red", isolationMode: "dedicated" },
  ],
});
const api: EnvelopeContext = { writer: { service: "api", instanceId: "api-1" }, clock: systemClock, ids: randomIds };
const mk = (type: DroverEvent["type"], data: unknown, tenantId: string, id: string) =>
  looseEvent(api, type, data, { tenantId, correlationId: id, causationId: "test" });

describe("admission's runs gauge on /metrics (real NATS + Redis, scraped over HTTP)", () => {
  let fx: StreamsFixture, store: EventStore, redis: Redis, ops: OpsServer, svc: AdmissionService;

  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "admm");
    store = createEventStore(fx.nc, fx.layout);
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1, db: 1 });
    await redis.flushdb();
    ops = await startOpsServer({
      service: "admission",
      instanceId: "adm-1",
      log: pino({ level: "silent" }),
      nc: fx.nc,
      jsm: fx.jsm,
      layout: fx.layout,
    });
  });
  afterEach(async () => {
    await svc?.stop();
    await ops.close();
    redis.disconnect();
    await fx.close();
  });

  const runs = async (tenant: string, status: string) =>
    sample(await scrape(ops.port), "drover_runs", { service: "admission", tenant, status });
  const reaches = (tenant: string, status: string, n: number) =>
    eventually(`drover_runs ${tenant} ${status} = ${n}`, async () =>
      (await runs(tenant, status)) === n ? true : undefined,
    );
  const submit = (tenant: string, id: string) =>
    store.append(
      runRef(tenant, id),
      mk("run.submitted", { sharedRunId: id, dag: exampleDag, source: "api", labels: {} }, tenant, id),
      {
        expectedSeq: 0,
      },
    );

  it("counts each tenant's runs by status and moves them as they change (queued → cancelled), also those replayed at start", async () => {
    await submit("t-red", "run-r1");
    const index = new RunIndex(fx.layout.eventPrefix, () => undefined, systemClock);
    svc = await startAdmission({
      js: jetstream(fx.nc),
      config,
      layout: fx.layout,
      store,
      index,
      view: redisCapacityView<CapacityDescriptor>(redis, CP),
      reservations: redisReservations(redis, CP),
      env: { writer: { service: "admission", instanceId: uniqueName("adm") }, clock: systemClock, ids: randomIds },
      send: async () => {
        throw new Error("no runtime exists in this test");
      },
      commandTokenFor: () => "token",
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: pino({ level: "silent" }),
      tickMs: 100,
    });
    await svc.ready;
    registerRunsGauge(ops.registry, index);

    await reaches("t-red", "queued", 1);
    expect(await runs("t-blue", "queued")).toBeUndefined();
    await submit("t-blue", "run-b1");
    await submit("t-blue", "run-b2");
    await reaches("t-blue", "queued", 2);

    const seq = await store.lastSeq(runRef("t-blue", "run-b1"));
    await store.append(
      runRef("t-blue", "run-b1"),
      mk("run.cancel-requested", { by: "tenant:t-blue", reason: "test" }, "t-blue", "run-b1"),
      { expectedSeq: seq },
    );
    await reaches("t-blue", "cancelled", 1);
    expect(await runs("t-blue", "queued")).toBe(1);
    expect(await runs("t-red", "queued")).toBe(1);
  });
});
