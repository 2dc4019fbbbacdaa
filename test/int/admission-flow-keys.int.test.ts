import { createHash } from "node:crypto";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { DroverConfig } from "../../contracts/index.ts";
import { foldRun } from "../../aggregates/run.ts";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { RunIndex, startAdmission, type AdmissionService } from "../../services/admission/index.ts";
import { startCapacityProjection, type CapacityProjection } from "../../services/capacity/index.ts";
import { runView } from "../../services/api/index.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { redisReservations } from "../../platform/reservations.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { createEventStore, runRef, type EventStore, type StoredEvent } from "../../streams/index.ts";
import { exampleDag } from "../support/example-events.ts";
import { publishBeat, publishReadyRuntime } from "../support/fake-runtime-capacity.ts";
import { uniqueName } from "../support/isolation.ts";
import { inMemoryRuntime } from "../support/in-memory-runtime.ts";
import { looseEvent } from "../support/loose-event.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * Per-key flow control (docs/flow-control.md) with two admission replicas against a real
 * nats-server and Redis and the real capacity projection. The runtime's command transport is an
 * in-memory responder that "runs" each dispatched run for RUN_MS and appends its `started` and
 * `completed` as the runtime would: these tests prove the key's limits across replicas, the held
 * runs' reasons and the priority order, not the runtime transport.
 */
const CP = "cp-flow";
const TENANTS = ["t-a", "t-b", "t-c"];
const LIMIT = 5;
const RATE = 10;
const BURST = 2;
const RUN_MS = 700;
const LOW = 10;
const HIGH = 5;
const config = DroverConfig.parse({
  controlPlaneId: CP,
  heartbeatIntervalMs: 1000,
  staleHeartbeatMs: 120_000, // the fake runtimes beat once: flow control is tested here, not health
  dispatchTimeoutMs: 2000,
  tenants: TENANTS.map((tenantId) => ({
    tenantId,
    isolationMode: "dedicated",
    maxConcurrentRuns: 100,
    flowKeys: [
      { name: "openai", key: "openai:{input.model}", concurrency: LIMIT, rate: { perSecond: RATE, burst: BURST } },
    ],
  })),
});

describe("per-key flow control (real NATS + Redis, two admission replicas; runtime transport in memory)", () => {
  let fx: StreamsFixture, js: JetStreamClient, store: EventStore, redis: Redis, capacity: CapacityProjection;
  let services: AdmissionService[] = [];
  let connections: NatsConnection[] = [];
  const tenantOf = new Map<string, string>();
  let runtime: ReturnType<typeof inMemoryRuntime>;

  // Each replica on its own connection, as separate processes are: on one shared connection the
  // replica whose consumer was made first is handed every event first and wins nearly every race.
  async function admission(): Promise<AdmissionService> {
    const nc = await connectHarness({ servers: inject("natsUrl") });
    connections.push(nc);
    const s = await startAdmission({
      js: jetstream(nc),
      config,
      layout: fx.layout,
      store: createEventStore(nc, fx.layout),
      index: new RunIndex(fx.layout.eventPrefix, () => undefined, systemClock),
      view: redisCapacityView<CapacityDescriptor>(redis, CP),
      reservations: redisReservations(redis, CP),
      env: { writer: { service: "admission", instanceId: uniqueName("adm") }, clock: systemClock, ids: randomIds },
      send: runtime.send as never,
      commandTokenFor: () => "token",
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: pino({ level: "silent" }),
      tickMs: 50,
    });
    services.push(s);
    await s.ready;
    return s;
  }

  const submit = async (tenantId: string, id: string, priority: number, model = "gpt-4o") => {
    const e = looseEvent(
      { writer: { service: "api", instanceId: "api-1" }, clock: systemClock, ids: randomIds },
      "run.submitted",
      { sharedRunId: id, dag: exampleDag, source: "api", labels: {}, input: { model }, priority },
      { tenantId, correlationId: id, causationId: "test" },
    );
    tenantOf.set(id, tenantId);
    await store.append(runRef(tenantId, id), e, { expectedSeq: 0 });
  };
  const history = async (id: string): Promise<readonly StoredEvent[]> =>
    (await store.read(runRef(tenantOf.get(id)!, id))).events;
  const all = async (filter: string) => {
    const out: StoredEvent[] = [];
    await store.replay({ seq: 1 }, (e) => void out.push(e), { filter: `${fx.layout.eventPrefix}.${filter}` });
    return out;
  };

  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "flow");
    js = jetstream(fx.nc);
    store = createEventStore(fx.nc, fx.layout);
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1, db: 10 });
    await redis.flushdb();
    capacity = await startCapacityProjection({
      js,
      layout: fx.layout,
      view: redisCapacityView<CapacityDescriptor>(redis, CP),
      controlPlaneId: CP,
    });
    services = [];
    runtime = inMemoryRuntime(store, RUN_MS);
  });
  afterEach(async () => {
    for (const s of services) await s.stop();
    for (const nc of connections) await nc.close();
    connections = [];
    runtime.stop();
    await capacity.stop();
    redis.disconnect();
    await fx.close();
  });

  it("three tenants, a key of concurrency 5 and rate 10/s, two replicas: never more than 5 in flight nor over the rate, each held run names its reason, higher priority first", async () => {
    for (const t of TENANTS) {
      const rt = `rt-${t}-1`;
      await publishReadyRuntime(store, {
        runtimeInstanceId: rt,
        controlPlaneId: CP,
        isolationMode: "dedicated",
        tenantId: t,
        slots: 60,
      });
      await publishBeat(js, fx.layout, rt, 1, 60);
    }
    await eventually("capacity", async () => {
      const view = await redisCapacityView<CapacityDescriptor>(redis, CP).all();
      return TENANTS.every((t) => view.find((d) => d.runtimeInstanceId === `rt-${t}-1`)?.status === "ready")
        ? true
        : undefined;
    });
    // The backlog is in the log before admission starts: low-priority runs first, then high ones,
    // and one run of another model (its own key value) per tenant.
    const ids: string[] = [];
    for (const t of TENANTS) {
      for (let i = 0; i < LOW; i++) await submit(t, `${t}-low-${i}`, 1);
      for (let i = 0; i < HIGH; i++) await submit(t, `${t}-high-${i}`, 9);
      await submit(t, `${t}-other`, 0, "gpt-5");
      ids.push(
        ...[...Array(LOW).keys()].map((i) => `${t}-low-${i}`),
        ...[...Array(HIGH).keys()].map((i) => `${t}-high-${i}`),
        `${t}-other`,
      );
    }
    const t0 = Date.now();
    await Promise.all([admission(), admission()]);
    await eventually(
      "every run completed",
      async () => {
        for (const id of ids) if (!(await history(id)).some((e) => e.event.type === "run.completed")) return undefined;
        return true;
      },
      60_000,
    );
    const elapsed = Date.now() - t0;

    // 1. In flight per tenant and key value, in the stream's order: admitted → a terminal event.
    const runEvents = await all("run.>");
    const inFlight = new Map<string, number>();
    const maxInFlight = new Map<string, number>();
    const model = (id: string) => (id.endsWith("-other") ? "gpt-5" : "gpt-4o");
    for (const e of runEvents) {
      const id = e.event.correlationId;
      const k = `${tenantOf.get(id)}/${model(id)}`;
      const d = e.event.type === "run.admitted" ? 1 : e.event.type === "run.completed" ? -1 : 0;
      if (d === 0) continue;
      inFlight.set(k, (inFlight.get(k) ?? 0) + d);
      maxInFlight.set(k, Math.max(maxInFlight.get(k) ?? 0, inFlight.get(k)!));
    }
    for (const t of TENANTS) expect(maxInFlight.get(`${t}/gpt-4o`), `max in flight of ${t}`).toBeLessThanOrEqual(LIMIT);
    expect(Math.max(...maxInFlight.values())).toBe(LIMIT); // the limit was reached, not just respected

    // 2. The rate: the key's admissions in their stream order are GCRA-conformant (n - burst ≤ span × rate).
    const acquired = (await all("flowkey.>")).filter((e) => e.event.type === "flowkey.acquired");
    // Both replicas took keys: the limits held across them, not within one process.
    const deciders = new Set(acquired.map((e) => e.event.writer.instanceId));
    expect(deciders.size).toBe(2);
    const windows: number[] = [];
    for (const t of TENANTS) {
      const times = acquired
        .filter(
          (e) => e.event.tenantId === t && e.event.type === "flowkey.acquired" && e.event.data.key === "openai:gpt-4o",
        )
        .map((e) => (e.event.type === "flowkey.acquired" ? Date.parse(e.event.data.at) : 0));
      expect(times).toHaveLength(LOW + HIGH); // each run took the key once
      for (let i = 0; i < times.length; i++)
        for (let j = i + 1; j < times.length; j++)
          expect(j - i + 1 - BURST, `${t} admissions ${i}..${j}`).toBeLessThanOrEqual(
            ((times[j]! - times[i]!) * RATE) / 1000,
          );
      for (const s of times) windows.push(times.filter((x) => x >= s && x < s + 1000).length);
    }

    // 3. Held runs: every queued-globally names a flow key reason, recorded once per change of reason.
    const held = new Map<string, string[]>();
    for (const e of runEvents)
      if (e.event.type === "run.queued-globally")
        held.set(e.event.correlationId, [
          ...(held.get(e.event.correlationId) ?? []),
          `${e.event.data.reason.code}|${e.event.data.reason.detail}`,
        ]);
    const reasons = [...held.values()].flat();
    expect(reasons.some((r) => /^waiting-for-key\|waiting-for-key openai:gpt-4o /.test(r))).toBe(true);
    expect(
      reasons.some((r) => /^key-rate-limited\|rate-limited until \d{4}-\d\d-\d\dT[\d:.]+Z \(openai:gpt-4o\)$/.test(r)),
    ).toBe(true);
    expect(reasons.every((r) => /^(waiting-for-key|key-rate-limited)\|/.test(r))).toBe(true);
    for (const [id, rs] of held)
      for (let i = 1; i < rs.length; i++)
        expect(rs[i]!.split("|")[0], `${id} repeated its reason`).not.toBe(rs[i - 1]!.split("|")[0]);
    // What GET /v1/runs/:id answers while a run is held: its reason, from the run's own log.
    const [heldId] = [...held.keys()];
    const h = await history(heldId!);
    const upToHold = h.slice(0, h.findIndex((e) => e.event.type === "run.queued-globally") + 1);
    expect(runView(foldRun(upToHold))?.waitingFor).toMatch(/^(waiting-for-key|rate-limited until) /);

    // 4. Priority: within each tenant, every high-priority run took the key before any low one.
    const order = new Map<string, string[]>();
    for (const e of acquired)
      if (e.event.type === "flowkey.acquired" && e.event.data.key === "openai:gpt-4o")
        order.set(e.event.tenantId, [...(order.get(e.event.tenantId) ?? []), e.event.data.sharedRunId]);
    for (const t of TENANTS) {
      const o = order.get(t)!;
      expect(
        o.slice(0, HIGH).every((id) => id.includes("-high-")),
        `${t}: ${o.join(",")}`,
      ).toBe(true);
    }
    console.log(
      `flow-control figures: max in flight ${JSON.stringify(Object.fromEntries(maxInFlight))}; ` +
        `max admissions in any 1 s window ${Math.max(...windows)} (rate ${RATE}/s, burst ${BURST}); ` +
        `acquisitions by replica ${JSON.stringify([...deciders].map((d) => acquired.filter((e) => e.event.writer.instanceId === d).length))}; held runs ${held.size}, reasons ${reasons.length}; order ${TENANTS.map(
          (t) =>
            `${t}: ${order
              .get(t)!
              .map((id) => id.replace(`${t}-`, ""))
              .join(" ")}`,
        ).join("; ")}; ${elapsed} ms`,
    );
  }, 90_000);
});
