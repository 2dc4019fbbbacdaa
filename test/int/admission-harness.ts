import { createHash } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterEach, beforeEach, inject } from "vitest";
import { DroverConfig, type RuntimeCommand, type RuntimeCommandResult } from "../../contracts/index.ts";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { RunIndex, startAdmission, type AdmissionService } from "../../services/admission/index.ts";
import { startCapacityProjection, type CapacityProjection } from "../../services/capacity/index.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { redisReservations } from "../../platform/reservations.ts";
import { createEventStore, runRef, type EventStore, type StoredEvent } from "../../streams/index.ts";
import { exampleDag } from "../support/example-events.ts";
import { publishBeat, publishReadyRuntime } from "../support/fake-runtime-capacity.ts";
import { uniqueName } from "../support/isolation.ts";
import { looseEvent } from "../support/loose-event.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * Admission against a real nats-server and Redis, with the real capacity projection, for the
 * admission int tests. The runtime's command transport is an in-memory responder: these tests prove
 * placement, isolation, fencing of decisions and scale-out, not the runtime transport (see test/host
 * and test/e2e). Each file passes its own control plane id: its Redis keys are its own.
 */
export function admissionConfig(controlPlaneId: string): DroverConfig {
  return DroverConfig.parse({
    controlPlaneId,
    heartbeatIntervalMs: 1000,
    staleHeartbeatMs: 120_000, // the fake runtimes beat once: placement is tested here, not health
    dispatchTimeoutMs: 500,
    tenants: [
      { tenantId: "t-blue", isolationMode: "dedicated", maxConcurrentRuns: 50 },
      { tenantId: "t-red", isolationMode: "dedicated" },
      { tenantId: "t-grey", isolationMode: "shared", maxConcurrentRuns: 2, overQuota: "queue" },
    ],
  });
}

/** Registers a fresh stream set, Redis keyspace and capacity projection per test; returns the handles. */
export function admissionHarness(cp: string) {
  const config = admissionConfig(cp);
  const h = {
    config,
    cp,
    fx: undefined as unknown as StreamsFixture,
    store: undefined as unknown as EventStore,
    redis: undefined as unknown as Redis,
    /** Every command admission sent to a runtime, in order. */
    sent: [] as RuntimeCommand[],
    /** Runtimes whose in-memory responder refuses every dispatch (`local-queue-full`). */
    refuse: new Set<string>(),
    /** LocalRunIds the in-memory runtime answers GetRunStatus `unknown` for (a dispatch that never arrived). */
    unknownRuns: new Set<string>(),
    /** Runs after the in-memory runtime built a dispatch's answer, before admission gets it (an answer in transit). */
    answerInTransit: undefined as ((c: RuntimeCommand) => Promise<void>) | undefined,
    tenantOf: new Map<string, string>(),
    services: [] as AdmissionService[],
    connections: [] as NatsConnection[],
    capacity: undefined as unknown as CapacityProjection,

    answeredAt: new Map<RuntimeCommand, string>(),
    /** When the in-memory runtime received `c` (its answer's `timings.receivedAt`). */
    lastAnswerAt: (c: RuntimeCommand): string => h.answeredAt.get(c)!,

    async send(_endpoint: string, _t: unknown, c: RuntimeCommand): Promise<RuntimeCommandResult> {
      h.sent.push(c);
      const receivedAt = new Date().toISOString();
      h.answeredAt.set(c, receivedAt);
      const base = {
        operation: c.operation,
        runtimeInstanceId: c.runtimeInstanceId,
        hostIncarnation: "pid:1:1" as never,
        timings: { receivedAt, handledMs: 1 },
      };
      if (c.operation === "DispatchRun") await h.answerInTransit?.(c);
      if (c.operation === "GetRunStatus") {
        const state = h.unknownRuns.has(c.payload.localRunId) ? "unknown" : "queued";
        return { ...base, success: true, payload: { run: { localRunId: c.payload.localRunId, state } } };
      }
      const ok = !h.refuse.has(c.runtimeInstanceId);
      return {
        ...base,
        success: ok,
        payload: {},
        ...(ok ? {} : { failureReason: "local-queue-full" as const, failureDetail: "full" }),
      };
    },

    /** Starts an admission replica on its own NATS connection, as a separate process would be. */
    async admission(cfg: DroverConfig = config, tickMs = 100): Promise<AdmissionService> {
      const nc = await connectHarness({ servers: inject("natsUrl") });
      h.connections.push(nc);
      const s = await startAdmission({
        js: jetstream(nc),
        config: cfg,
        layout: h.fx.layout,
        store: createEventStore(nc, h.fx.layout),
        index: new RunIndex(h.fx.layout.eventPrefix, () => undefined, systemClock),
        view: redisCapacityView<CapacityDescriptor>(h.redis, cp),
        reservations: redisReservations(h.redis, cp),
        env: { writer: { service: "admission", instanceId: uniqueName("adm") }, clock: systemClock, ids: randomIds },
        send: h.send as never,
        commandTokenFor: () => "token",
        sha256: (x) => createHash("sha256").update(x).digest("hex"),
        log: pino({ level: "silent" }),
        tickMs,
      });
      h.services.push(s);
      await s.ready;
      return s;
    },

    /** A ready runtime (dedicated to `tenantId`, or shared without one) that beat once with `slots` free. */
    async readyRuntime(runtimeInstanceId: string, tenantId: string | undefined, slots: number) {
      await publishReadyRuntime(h.store, {
        runtimeInstanceId,
        controlPlaneId: cp,
        isolationMode: tenantId ? "dedicated" : "shared",
        ...(tenantId ? { tenantId } : {}),
        slots,
      });
      await publishBeat(jetstream(h.fx.nc), h.fx.layout, runtimeInstanceId, 1, slots);
    },

    /** Waits until the capacity view shows every runtime as able to accept (the projection is asynchronous). */
    capacityShows: (...rts: string[]) =>
      eventually(`capacity of ${rts.join(",")}`, async () => {
        const all = await redisCapacityView<CapacityDescriptor>(h.redis, cp).all();
        const shown = (rt: string) => all.find((d) => d.runtimeInstanceId === rt);
        return rts.every((rt) => shown(rt)?.status === "ready" && shown(rt)?.beats["pid:1:1"]) ? true : undefined;
      }),

    async submit(tenantId: string, id: string) {
      const e = looseEvent(
        { writer: { service: "api", instanceId: "api-1" }, clock: systemClock, ids: randomIds },
        "run.submitted",
        { sharedRunId: id, dag: exampleDag, source: "api", labels: {} },
        { tenantId, correlationId: id, causationId: "test" },
      );
      h.tenantOf.set(id, tenantId);
      await h.store.append(runRef(tenantId, id), e, { expectedSeq: 0 });
    },
    history: async (id: string): Promise<readonly StoredEvent[]> =>
      (await h.store.read(runRef(h.tenantOf.get(id)!, id))).events,
    types: async (id: string) => (await h.history(id)).map((e) => e.event.type),
  };

  beforeEach(async () => {
    h.fx = await freshStreams(inject("natsUrl"), "adm");
    h.store = createEventStore(h.fx.nc, h.fx.layout);
    h.redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1, db: 5 });
    const stale = await h.redis.keys(`drover:${cp}:*`);
    if (stale.length > 0) await h.redis.del(...stale);
    h.capacity = await startCapacityProjection({
      js: jetstream(h.fx.nc),
      layout: h.fx.layout,
      view: redisCapacityView<CapacityDescriptor>(h.redis, cp),
      controlPlaneId: cp,
    });
    h.sent = [];
    h.refuse = new Set();
    h.unknownRuns = new Set();
    h.answerInTransit = undefined;
    h.services = [];
  });
  afterEach(async () => {
    for (const s of h.services) await s.stop();
    for (const nc of h.connections) await nc.close();
    h.connections = [];
    await h.capacity.stop();
    h.redis.disconnect();
    await h.fx.close();
  });
  return h;
}
