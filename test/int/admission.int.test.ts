import { createHash } from "node:crypto";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import {
  DroverConfig,
  type DroverEvent,
  type RuntimeCommand,
  type RuntimeCommandResult,
} from "../../contracts/index.ts";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { RunIndex, startAdmission, type AdmissionService } from "../../services/admission/index.ts";
import { startCapacityProjection, type CapacityProjection } from "../../services/capacity/index.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { looseEvent } from "../support/loose-event.ts";

import { redisReservations } from "../../platform/reservations.ts";
import { createEventStore, eventSubject, runRef, type EventStore, type StoredEvent } from "../../streams/index.ts";
import { exampleDag } from "../support/example-events.ts";
import { publishBeat, publishReadyRuntime } from "../support/fake-runtime-capacity.ts";
import { uniqueName } from "../support/isolation.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * Admission against a real nats-server and Redis, with the real capacity projection. The runtime's
 * command transport is replaced by an in-memory responder: these tests prove placement, isolation,
 * fencing of decisions and scale-out, not the runtime transport (see test/host and test/e2e).
 */
const CP = "cp-adm";
const config = DroverConfig.parse({
  controlPlaneId: CP,
  heartbeatIntervalMs: 1000,
  staleHeartbeatMs: 120_000, // the fake runtimes beat once: placement is tested here, not health
  dispatchTimeoutMs: 500,
  tenants: [
    { tenantId: "t-blue", isolationMode: "dedicated", maxConcurrentRuns: 50 },
    { tenantId: "t-red", isolationMode: "dedicated" },
    { tenantId: "t-grey", isolationMode: "shared", maxConcurrentRuns: 2, overQuota: "queue" },
  ],
});

describe("admission (real NATS + Redis; runtime transport replaced by an in-memory responder)", () => {
  let fx: StreamsFixture, js: JetStreamClient, store: EventStore, redis: Redis, capacity: CapacityProjection;
  let services: AdmissionService[] = [];
  let sent: RuntimeCommand[] = [];
  let refuse = new Set<string>();
  /** LocalRunIds the in-memory runtime answers GetRunStatus `unknown` for (a dispatch that never arrived). */
  let unknownRuns = new Set<string>();
  const tenantOf = new Map<string, string>();

  const send = async (_endpoint: string, _t: unknown, c: RuntimeCommand): Promise<RuntimeCommandResult> => {
    sent.push(c);
    if (c.operation === "GetRunStatus") {
      const known = !unknownRuns.has(c.payload.localRunId);
      return {
        success: true,
        operation: c.operation,
        runtimeInstanceId: c.runtimeInstanceId,
        hostIncarnation: "pid:1:1" as never,
        payload: { run: { localRunId: c.payload.localRunId, state: known ? "queued" : "unknown" } },
        timings: { receivedAt: new Date().toISOString(), handledMs: 1 },
      };
    }
    const ok = !refuse.has(c.runtimeInstanceId);
    return {
      success: ok,
      operation: c.operation,
      runtimeInstanceId: c.runtimeInstanceId,
      hostIncarnation: "pid:1:1" as never,
      payload: {},
      ...(ok ? {} : { failureReason: "local-queue-full" as const, failureDetail: "full" }),
      timings: { receivedAt: new Date().toISOString(), handledMs: 1 },
    };
  };

  async function admission(cfg: DroverConfig = config): Promise<AdmissionService> {
    const index = new RunIndex(fx.layout.eventPrefix, () => undefined, systemClock);
    const s = await startAdmission({
      js,
      config: cfg,
      layout: fx.layout,
      store,
      index,
      view: redisCapacityView<CapacityDescriptor>(redis, CP),
      reservations: redisReservations(redis, CP),
      env: { writer: { service: "admission", instanceId: uniqueName("adm") }, clock: systemClock, ids: randomIds },
      send: send as never,
      commandTokenFor: () => "token",
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: pino({ level: "silent" }),
      tickMs: 100,
    });
    services.push(s);
    await s.ready;
    return s;
  }

  /** Waits until the capacity view shows every runtime as able to accept (the projection is asynchronous). */
  const capacityShows = (...rts: string[]) =>
    eventually(`capacity of ${rts.join(",")}`, async () => {
      const all = await redisCapacityView<CapacityDescriptor>(redis, CP).all();
      return rts.every(
        (rt) =>
          all.find((d) => d.runtimeInstanceId === rt)?.status === "ready" &&
          all.find((d) => d.runtimeInstanceId === rt)?.beats["pid:1:1"],
      )
        ? true
        : undefined;
    });

  const submit = async (tenantId: string, id: string) => {
    const e = looseEvent(
      { writer: { service: "api", instanceId: "api-1" }, clock: systemClock, ids: randomIds },
      "run.submitted",
      { sharedRunId: id, dag: exampleDag, source: "api", labels: {} },
      { tenantId, correlationId: id, causationId: "test" },
    );
    tenantOf.set(id, tenantId);
    await store.append(runRef(tenantId, id), e, { expectedSeq: 0 });
  };
  const history = async (id: string): Promise<readonly StoredEvent[]> =>
    (await store.read(runRef(tenantOf.get(id)!, id))).events;
  const types = async (id: string) => (await history(id)).map((e) => e.event.type);

  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "adm");
    js = jetstream(fx.nc);
    store = createEventStore(fx.nc, fx.layout);
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1, db: 5 });
    await redis.flushdb();
    capacity = await startCapacityProjection({
      js,
      layout: fx.layout,
      view: redisCapacityView<CapacityDescriptor>(redis, CP),
      controlPlaneId: CP,
    });
    sent = [];
    refuse = new Set();
    unknownRuns = new Set();
    services = [];
  });
  afterEach(async () => {
    for (const s of services) await s.stop();
    await capacity.stop();
    redis.disconnect();
    await fx.close();
  });
  afterAll(() => undefined);

  it("places a run only on capacity visible to its tenant and records dispatched before sending, with the dispatched sequence in the command", async () => {
    await publishReadyRuntime(store, {
      runtimeInstanceId: "rt-red-1",
      controlPlaneId: CP,
      isolationMode: "dedicated",
      tenantId: "t-red",
      slots: 5,
    });
    await publishReadyRuntime(store, {
      runtimeInstanceId: "rt-blue-1",
      controlPlaneId: CP,
      isolationMode: "dedicated",
      tenantId: "t-blue",
      slots: 5,
    });
    for (const rt of ["rt-red-1", "rt-blue-1"]) await publishBeat(js, fx.layout, rt, 1, 5);
    await capacityShows("rt-red-1", "rt-blue-1");
    await admission();
    await submit("t-blue", "run-b1");
    await eventually("dispatched", async () => ((await types("run-b1")).includes("run.dispatched") ? true : undefined));
    const h = await history("run-b1");
    const dispatched = h.find((e) => e.event.type === "run.dispatched")!;
    expect(dispatched.event.type === "run.dispatched" && dispatched.event.data.runtimeInstanceId).toBe("rt-blue-1");
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      operation: "DispatchRun",
      runtimeInstanceId: "rt-blue-1",
      payload: { dispatchedSeq: dispatched.seq, tenantId: "t-blue" },
    });
  });

  it("queues runs without visible capacity and asks for exactly one scale-out for a burst, even with two admission replicas", async () => {
    await publishReadyRuntime(store, {
      runtimeInstanceId: "rt-red-2",
      controlPlaneId: CP,
      isolationMode: "dedicated",
      tenantId: "t-red",
      slots: 5,
    });
    await publishBeat(js, fx.layout, "rt-red-2", 1, 5);
    await capacityShows("rt-red-2");
    await Promise.all([admission(), admission()]);
    for (let i = 0; i < 6; i++) await submit("t-blue", `run-q${i}`);
    for (let i = 0; i < 6; i++)
      await eventually("queued", async () =>
        (await types(`run-q${i}`)).includes("run.scale-out-requested") ? true : undefined,
      );
    const requests: StoredEvent[] = [] as StoredEvent[];
    await store.replay(
      { seq: 1 },
      (e) => {
        if (e.event.type === "scaleout.requested") requests.push(e);
      },
      { filter: `${fx.layout.eventPrefix}.scaleout.>` },
    );
    expect(requests).toHaveLength(1);
    expect(sent).toHaveLength(0);
    for (let i = 0; i < 6; i++)
      expect((await types(`run-q${i}`)).filter((t) => t === "run.queued-globally")).toHaveLength(1);
  });

  it("admits and dispatches every run exactly once with two admission replicas competing, never over the runtime's slots", async () => {
    await publishReadyRuntime(store, {
      runtimeInstanceId: "rt-blue-a",
      controlPlaneId: CP,
      isolationMode: "dedicated",
      tenantId: "t-blue",
      slots: 4,
    });
    await publishReadyRuntime(store, {
      runtimeInstanceId: "rt-blue-b",
      controlPlaneId: CP,
      isolationMode: "dedicated",
      tenantId: "t-blue",
      slots: 4,
    });
    for (const rt of ["rt-blue-a", "rt-blue-b"]) await publishBeat(js, fx.layout, rt, 1, 4);
    await capacityShows("rt-blue-a", "rt-blue-b");
    // The fake runtimes beat once, so nothing ever shows a dispatched run: a dispatched run's slot
    // stays counted only while its reservation lasts (3 heartbeat intervals). At 1 s that ran out on
    // a loaded machine before the last check and the slots looked free again (11 dispatched, seen in
    // a merge's int tier). At 30 s it outlasts the test, as a real runtime's next beats would.
    const slowBeats = DroverConfig.parse({ ...config, heartbeatIntervalMs: 30_000 });
    await Promise.all([admission(slowBeats), admission(slowBeats)]);
    for (let i = 0; i < 12; i++) await submit("t-blue", `run-c${i}`);
    const placements = async () => {
      const placed = new Map<string, number>();
      for (let i = 0; i < 12; i++) {
        const h = await history(`run-c${i}`);
        expect(h.filter((e) => e.event.type === "run.admitted").length, `run-c${i} admitted twice`).toBeLessThanOrEqual(
          1,
        );
        const d = h.find((e) => e.event.type === "run.dispatched");
        if (d && d.event.type === "run.dispatched")
          placed.set(d.event.data.runtimeInstanceId, (placed.get(d.event.data.runtimeInstanceId) ?? 0) + 1);
      }
      return placed;
    };
    // A replica that loses the race for a run keeps its slot reservation until it expires (3 ×
    // dispatchTimeoutMs): meanwhile a run may be queued, and is placed once the slot is free again.
    // So all 8 slots fill eventually, never more, and each placement is sent once.
    await eventually("8 runs dispatched", async () =>
      [...(await placements()).values()].reduce((a, b) => a + b, 0) === 8 ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 4 * config.dispatchTimeoutMs));
    const placed = await placements();
    expect([...placed.values()].reduce((a, b) => a + b, 0)).toBe(8);
    for (const n of placed.values()) expect(n).toBeLessThanOrEqual(4);
    expect(sent.filter((c) => c.operation === "DispatchRun")).toHaveLength(8);
  });

  it("records a refused dispatch as dispatch-failed with the runtime's reason and places the run again under a new LocalRunId", async () => {
    await publishReadyRuntime(store, {
      runtimeInstanceId: "rt-blue-x",
      controlPlaneId: CP,
      isolationMode: "dedicated",
      tenantId: "t-blue",
      slots: 3,
    });
    await publishReadyRuntime(store, {
      runtimeInstanceId: "rt-blue-y",
      controlPlaneId: CP,
      isolationMode: "dedicated",
      tenantId: "t-blue",
      slots: 2,
    });
    await publishBeat(js, fx.layout, "rt-blue-x", 1, 3);
    await publishBeat(js, fx.layout, "rt-blue-y", 1, 2);
    refuse.add("rt-blue-x");
    await capacityShows("rt-blue-x", "rt-blue-y");
    await admission();
    await submit("t-blue", "run-f1");
    await eventually("redispatched", async () =>
      (await history("run-f1")).filter((e) => e.event.type === "run.dispatched").length === 2 ? true : undefined,
    );
    const h = (await history("run-f1")).map((e) => e.event as DroverEvent);
    const failed = h.find((e) => e.type === "run.dispatch-failed");
    expect(failed?.type === "run.dispatch-failed" && failed.data.reason.code).toBe("local-queue-full");
    const lrs = h.flatMap((e) => (e.type === "run.admitted" ? [e.data.localRunId] : []));
    expect(new Set(lrs).size).toBe(2);
    const last = h.filter((e) => e.type === "run.dispatched").at(-1)!;
    expect(last.type === "run.dispatched" && last.data.runtimeInstanceId).toBe("rt-blue-y");
  });

  it("rejects every kind of invalid submission a trusted producer publishes straight to JetStream with a structured reason, and admits a valid one after them", async () => {
    await publishReadyRuntime(store, {
      runtimeInstanceId: "rt-blue-p",
      controlPlaneId: CP,
      isolationMode: "dedicated",
      tenantId: "t-blue",
      slots: 3,
    });
    await publishBeat(js, fx.layout, "rt-blue-p", 1, 3);
    await capacityShows("rt-blue-p");
    await admission();
    const ctx = {
      writer: { service: "producer" as const, instanceId: "producer-1" },
      clock: systemClock,
      ids: randomIds,
    };
    const submitted = (id: string, data: Record<string, unknown> = {}, tenantId = "t-blue") => ({
      ...looseEvent(
        ctx,
        "run.submitted",
        { sharedRunId: id, dag: exampleDag, source: "producer", labels: {}, ...data },
        { tenantId, correlationId: id, causationId: "producer" },
      ),
    });
    const cases: [id: string, payload: string, why: RegExp][] = [
      ["run-bad-json", "{ not json", /not JSON/],
      ["run-bad-type", JSON.stringify({ ...submitted("run-bad-type"), type: "run.submited" }), /unknown event type/],
      [
        "run-bad-schema",
        JSON.stringify({
          ...submitted("run-bad-schema"),
          data: { sharedRunId: "run-bad-schema", source: "producer", labels: {} },
        }),
        /dag/,
      ],
      [
        "run-bad-writer",
        JSON.stringify({ ...submitted("run-bad-writer"), writer: { service: "robot", instanceId: "p" } }),
        /writer/,
      ],
      ["run-bad-field", JSON.stringify(submitted("run-bad-field", { priority: "high" })), /priority/],
      [
        "run-bad-cycle",
        JSON.stringify(
          submitted("run-bad-cycle", { dag: { steps: [{ id: "a", kind: "compute", dependsOn: ["a"] }] } }),
        ),
        /steps/,
      ],
      [
        "run-bad-dep",
        JSON.stringify(submitted("run-bad-dep", { dag: { steps: [{ id: "a", kind: "compute", dependsOn: ["zz"] }] } })),
        /steps/,
      ],
      ["run-bad-tenant", JSON.stringify(submitted("run-bad-tenant", {}, "t-red")), /tenant/],
      ["run-bad-id", JSON.stringify(submitted("run-other-id")), /sharedRunId/],
      ["run-bad-notenant", JSON.stringify(submitted("run-bad-notenant", {}, "")), /tenant/],
    ];
    for (const [id, payload] of cases) {
      tenantOf.set(id, "t-blue");
      await js.publish(eventSubject(fx.layout, runRef("t-blue", id), "run.submitted"), payload);
    }
    await js.publish(
      eventSubject(fx.layout, runRef("t-blue", "run-good"), "run.submitted"),
      JSON.stringify(submitted("run-good")),
    );
    tenantOf.set("run-good", "t-blue");
    await eventually("good dispatched", async () =>
      (await types("run-good")).includes("run.dispatched") ? true : undefined,
    );
    for (const [id, , why] of cases) {
      const raw = await eventually(`${id} rejected`, async () => {
        const m = await fx.jsm.streams.getMessage(fx.layout.eventStream, {
          last_by_subj: `${fx.layout.eventPrefix}.run.t-blue.${id}.>`,
        });
        return m?.subject.endsWith(".rejected") ? m : undefined;
      });
      const rejected = JSON.parse(new TextDecoder().decode(raw.data)) as {
        tenantId: string;
        data: { reason: { code: string; detail: string } };
      };
      expect(rejected.tenantId, id).toBe("t-blue");
      expect(rejected.data.reason.code, id).toBe("contract-violation");
      expect(rejected.data.reason.detail, id).toMatch(why);
    }
    // Nothing was placed for any invalid submission: only the valid run reached the runtime.
    expect(
      sent
        .filter((c) => c.operation === "DispatchRun")
        .map((c) => (c as { payload: { sharedRunId: string } }).payload.sharedRunId),
    ).toEqual(["run-good"]);
  });

  it("finishes runs a dead replica left admitted-not-dispatched (dispatches the same LocalRunId) or dispatched-but-never-sent (re-sends after GetRunStatus says unknown)", async () => {
    await publishReadyRuntime(store, {
      runtimeInstanceId: "rt-blue-d",
      controlPlaneId: CP,
      isolationMode: "dedicated",
      tenantId: "t-blue",
      slots: 5,
    });
    await publishBeat(js, fx.layout, "rt-blue-d", 1, 5);
    await capacityShows("rt-blue-d");
    // What a replica that died right after its append leaves behind (its reservations lapse with it).
    const dead = {
      writer: { service: "admission" as const, instanceId: "adm-dead" },
      clock: systemClock,
      ids: randomIds,
    };
    const placement = (id: string, lr: string, dispatched: boolean) => [
      looseEvent(
        dead,
        "run.admitted",
        {
          runtimeInstanceId: "rt-blue-d",
          localRunId: lr,
          reservationId: `rt-blue-d/${id}`,
          candidates: [],
          recovery: false,
        },
        { tenantId: "t-blue", correlationId: id, causationId: "dead" },
      ),
      ...(dispatched
        ? [
            looseEvent(
              dead,
              "run.dispatched",
              { runtimeInstanceId: "rt-blue-d", localRunId: lr, transport: "http", hostIncarnation: "pid:1:1" },
              { tenantId: "t-blue", correlationId: id, causationId: "dead" },
            ),
          ]
        : []),
    ];
    await submit("t-blue", "run-orphan-a");
    await store.appendAll(runRef("t-blue", "run-orphan-a"), placement("run-orphan-a", "lr-orphan-a", false), {
      expectedSeq: await store.lastSeq(runRef("t-blue", "run-orphan-a")),
    });
    await submit("t-blue", "run-orphan-d");
    await store.appendAll(runRef("t-blue", "run-orphan-d"), placement("run-orphan-d", "lr-orphan-d", true), {
      expectedSeq: await store.lastSeq(runRef("t-blue", "run-orphan-d")),
    });
    unknownRuns.add("lr-orphan-d");
    await admission();
    const dispatchesOf = (lr: string) =>
      sent.filter((c) => c.operation === "DispatchRun" && c.payload.localRunId === lr);
    await eventually("both orphans sent", async () =>
      dispatchesOf("lr-orphan-a").length > 0 && dispatchesOf("lr-orphan-d").length > 0 ? true : undefined,
    );
    const a = await history("run-orphan-a");
    expect(a.map((e) => e.event.type)).toEqual(["run.submitted", "run.admitted", "run.dispatched"]);
    const dispatchedA = a[2]!;
    expect(dispatchedA.event.type === "run.dispatched" && dispatchedA.event.data.localRunId).toBe("lr-orphan-a");
    expect(dispatchesOf("lr-orphan-a")[0]).toMatchObject({
      payload: { dispatchedSeq: dispatchedA.seq, sharedRunId: "run-orphan-a" },
    });
    // The dispatched one was asked about first, then re-sent under the same LocalRunId and sequence, with no second dispatched event.
    const d = await history("run-orphan-d");
    expect(d.map((e) => e.event.type)).toEqual(["run.submitted", "run.admitted", "run.dispatched"]);
    expect(
      sent.findIndex((c) => c.operation === "GetRunStatus" && c.payload.localRunId === "lr-orphan-d"),
    ).toBeLessThan(sent.findIndex((c) => c.operation === "DispatchRun" && c.payload.localRunId === "lr-orphan-d"));
    expect(dispatchesOf("lr-orphan-d")[0]).toMatchObject({ payload: { dispatchedSeq: d[2]!.seq } });
  });

  it("keeps a tenant at its concurrent-run quota queued with tenant-quota-exceeded", async () => {
    await publishReadyRuntime(store, {
      runtimeInstanceId: "rt-shared-1",
      controlPlaneId: CP,
      isolationMode: "shared",
      slots: 10,
    });
    await publishBeat(js, fx.layout, "rt-shared-1", 1, 10);
    await capacityShows("rt-shared-1");
    await admission();
    for (let i = 0; i < 4; i++) await submit("t-grey", `run-g${i}`);
    const outcomes = [];
    for (let i = 0; i < 4; i++)
      outcomes.push(
        await eventually("settled", async () => {
          const t = await types(`run-g${i}`);
          return t.includes("run.dispatched") ? "dispatched" : t.includes("run.queued-globally") ? "queued" : undefined;
        }),
      );
    expect(outcomes.filter((o) => o === "dispatched")).toHaveLength(2);
    const queued = (await history("run-g3")).find((e) => e.event.type === "run.queued-globally");
    expect(queued?.event.type === "run.queued-globally" && queued.event.data.reason.code).toBe("tenant-quota-exceeded");
  });
});
