import { createHash } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import type { Redis } from "ioredis";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  DroverConfig,
  type DroverEvent,
  type RuntimeCommand,
  type RuntimeCommandResult,
} from "../../contracts/index.ts";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { RunIndex, startAdmission, type AdmissionService } from "../../services/admission/index.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { redisReservations } from "../../platform/reservations.ts";
import type { EventStore } from "../../streams/index.ts";
import { exampleDag, forensicsIds, ids } from "../support/example-events.ts";
import { FAKE_INCARNATION, publishBeat, publishReadyRuntime } from "../support/fake-runtime-capacity.ts";
import { uniqueName } from "../support/isolation.ts";
import { eventually, type StreamsFixture } from "../support/streams.ts";
import { appendRunEvent, capacityGround, type CapacityGround } from "../support/admission-capacity.ts";

/**
 * Admission's runtime commands, against a real nats-server and Redis with the real capacity
 * projection; the runtime transport is an in-memory responder (proves no runtime transport). A
 * replacement runtime with one worker must receive a tenant's ResumeExecution before, and answer it
 * before, that tenant's other runs are sent — else a fresh run can take the only worker first. And
 * a runtime slow to answer must hold up only its own run, never another tenant's.
 */
const CP = "cp-resume-first";
const config = DroverConfig.parse({
  controlPlaneId: CP,
  heartbeatIntervalMs: 1000,
  // The fake runtimes beat once (readyRuntimes): command order is tested here, not health. With the
  // default 3 s bound, a loaded CI machine took longer than that from the beat to the second run's
  // placement, the red runtime looked stale, and its run was queued instead of sent (failed once in CI).
  staleHeartbeatMs: 120_000,
  dispatchTimeoutMs: 2000,
  tenants: [
    { tenantId: "t-blue", isolationMode: "dedicated", maxConcurrentRuns: 50 },
    { tenantId: "t-red", isolationMode: "dedicated", maxConcurrentRuns: 50 },
  ],
});
/**
 * How long a slow answer is held at most when what it waits for never comes (a product holding the
 * other tenant's run behind it): the order check then fails, not the test's deadline.
 */
const HELD_AT_MOST_MS = 8_000;

/** Fired once by one party, awaited by another: `within` resolves when fired or after `ms`. */
function signal() {
  let fire!: () => void;
  const fired = new Promise<void>((r) => (fire = r));
  return {
    fire: () => fire(),
    within: (ms: number) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      return Promise.race([fired, new Promise<void>((r) => (timer = setTimeout(r, ms)))]).finally(() =>
        clearTimeout(timer),
      );
    },
  };
}

describe("admission's runtime commands: a tenant's resume first, a slow runtime never holds another tenant (real NATS + Redis; runtime transport replaced by an in-memory responder)", () => {
  let fx: StreamsFixture, store: EventStore, redis: Redis, admission: AdmissionService | undefined;
  let ground: CapacityGround;
  beforeEach(async () => {
    ground = await capacityGround("admres", CP, 9);
    ({ fx, store, redis } = ground);
  });
  afterEach(async () => {
    await admission?.stop();
    await ground.close();
  });

  const append = (
    tenantId: string,
    id: string,
    type: DroverEvent["type"],
    data: unknown,
    service: "api" | "recovery" = "recovery",
  ) => appendRunEvent(store, service, tenantId, id, type, data);
  const submit = (tenantId: string, id: string) =>
    append(tenantId, id, "run.submitted", { sharedRunId: id, dag: exampleDag, source: "api", labels: {} }, "api");
  /** A run that started on a runtime that then died: recovery requeued it for resume (as recovery's batch does). */
  const interrupted = async (tenantId: string, id: string) => {
    await submit(tenantId, id);
    const lr = `lr-${id}`;
    await append(tenantId, id, "run.admitted", {
      runtimeInstanceId: "rt-dead",
      localRunId: lr,
      reservationId: `rt-dead/${id}`,
      candidates: [],
      recovery: false,
    });
    await append(tenantId, id, "run.dispatched", {
      runtimeInstanceId: "rt-dead",
      localRunId: lr,
      transport: "http",
      hostIncarnation: ids.host,
    });
    await append(tenantId, id, "run.started", {
      executionId: `exec-${id}`,
      localRunId: lr,
      runtimeInstanceId: "rt-dead",
    });
    await append(tenantId, id, "run.requeued-for-resume", {
      forensicsId: forensicsIds.inFlight,
      incidentId: ids.incident,
      executionId: `exec-${id}`,
      failedRuntimeInstanceId: "rt-dead",
      failedLocalRunId: lr,
      newEpoch: 1,
    });
  };

  const startWith = async (
    send: (e: string, t: unknown, c: RuntimeCommand) => Promise<RuntimeCommandResult>,
    through: EventStore = store,
  ) => {
    admission = await startAdmission({
      js: jetstream(fx.nc),
      config,
      layout: fx.layout,
      store: through,
      index: new RunIndex(fx.layout.eventPrefix, () => undefined, systemClock),
      view: redisCapacityView<CapacityDescriptor>(redis, CP),
      reservations: redisReservations(redis, CP),
      env: { writer: { service: "admission", instanceId: uniqueName("adm") }, clock: systemClock, ids: randomIds },
      send: send as never,
      commandTokenFor: () => "token",
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: pino({ level: "silent" }),
      tickMs: 100,
    });
    await admission.ready;
  };
  const readyRuntimes = async (...rts: (readonly [string, string, number?])[]) => {
    for (const [rt, tenantId, slots = 5] of rts) {
      await publishReadyRuntime(store, {
        runtimeInstanceId: rt,
        controlPlaneId: CP,
        isolationMode: "dedicated",
        tenantId,
        slots,
      });
      await publishBeat(jetstream(fx.nc), fx.layout, rt, 1, slots);
    }
    await eventually("capacity", async () =>
      (await redisCapacityView<CapacityDescriptor>(redis, CP).all()).filter(
        (d) => d.status === "ready" && d.beats[FAKE_INCARNATION],
      ).length === rts.length
        ? true
        : undefined,
    );
  };
  const ok = (c: RuntimeCommand): RuntimeCommandResult => ({
    success: true,
    operation: c.operation,
    runtimeInstanceId: c.runtimeInstanceId,
    hostIncarnation: FAKE_INCARNATION as never,
    payload: {},
    timings: { receivedAt: new Date().toISOString(), handledMs: 1 },
  });

  it("a runtime slow to answer holds up only its own run: another tenant's run submitted meanwhile is sent at once", async () => {
    await readyRuntimes(["rt-blue-slow", "t-blue"], ["rt-red-1", "t-red"]);
    const log: string[] = [];
    let slowSent = (): void => undefined;
    const slowStarted = new Promise<void>((r) => {
      slowSent = r;
    });
    const redAnswered = signal();
    await startWith(async (_e, _t, c) => {
      const tenant = c.runtimeInstanceId.includes("blue") ? "blue" : "red";
      log.push(`${tenant}:sent`);
      if (tenant === "blue") {
        slowSent();
        // Slow until red's run was answered, not for a fixed time a loaded machine may outlast.
        await redAnswered.within(HELD_AT_MOST_MS);
      }
      log.push(`${tenant}:answered`);
      if (tenant === "red") redAnswered.fire();
      return ok(c);
    });
    await submit("t-blue", "run-slow-1");
    await slowStarted;
    await submit("t-red", "run-red-2");
    await eventually(
      "both answered",
      async () => (log.filter((l) => l.endsWith(":answered")).length === 2 ? true : undefined),
      2 * HELD_AT_MOST_MS,
    );
    expect(log).toEqual(["blue:sent", "red:sent", "red:answered", "blue:answered"]);
  });

  it("answers a tenant's ResumeExecution before sending that tenant's other runs, and never holds another tenant's runs behind it", async () => {
    const log: string[] = [];
    const redSent = signal();
    const send = async (_e: string, _t: unknown, c: RuntimeCommand): Promise<RuntimeCommandResult> => {
      const tenant = c.runtimeInstanceId.includes("blue") ? "blue" : "red";
      log.push(`${tenant}:${c.operation}:sent`);
      if (tenant === "red") redSent.fire();
      // The blue resume is slow to answer (a journal to fold); the red run must not wait for it.
      // Slow until red's run went out, not for a fixed time a loaded machine may outlast.
      if (c.operation === "ResumeExecution") await redSent.within(HELD_AT_MOST_MS);
      log.push(`${tenant}:${c.operation}:answered`);
      return ok(c);
    };
    // Fresh runs first in the log, so submission order alone would send them first.
    for (const id of ["run-fresh-1", "run-fresh-2"]) await submit("t-blue", id);
    await submit("t-red", "run-red-1");
    await interrupted("t-blue", "run-resume");
    await readyRuntimes(["rt-blue-new", "t-blue"], ["rt-red-1", "t-red"]);
    await startWith(send);
    await eventually(
      "all sent",
      async () => (log.filter((l) => l.endsWith(":answered")).length === 4 ? true : undefined),
      2 * HELD_AT_MOST_MS,
    );
    const at = (entry: string) => log.indexOf(entry);
    const blue = log.filter((l) => l.startsWith("blue:"));
    expect(blue.slice(0, 2)).toEqual(["blue:ResumeExecution:sent", "blue:ResumeExecution:answered"]);
    expect(blue.slice(2).sort()).toEqual([
      "blue:DispatchRun:answered",
      "blue:DispatchRun:answered",
      "blue:DispatchRun:sent",
      "blue:DispatchRun:sent",
    ]);
    // The red tenant's run went out while the blue resume was still unanswered.
    expect(at("red:DispatchRun:sent")).toBeGreaterThan(-1);
    expect(at("red:DispatchRun:sent")).toBeLessThan(at("blue:ResumeExecution:answered"));
  });

  it("places a dead runtime's 20 interrupted executions at once, not 16 (PARALLEL) at a time: their 20 `admitted` appends are in flight together", async () => {
    const RESUMES = 20;
    // Each `run.admitted` append (to the real store) is held until all 20 are in flight, or 3 s:
    // placements 16 at a time never have more than 16 in flight, and the count says so.
    let inFlight = 0;
    let most = 0;
    const all = signal();
    const gated: EventStore = {
      ...store,
      appendAll: async (ref, events, o) => {
        if (!events.some((e) => e.type === "run.admitted")) return store.appendAll(ref, events, o);
        most = Math.max(most, ++inFlight);
        if (inFlight === RESUMES) all.fire();
        await all.within(3_000);
        inFlight--;
        return store.appendAll(ref, events, o);
      },
    };
    const resumed: string[] = [];
    for (let i = 0; i < RESUMES; i++) await interrupted("t-blue", `run-burst-${String(i).padStart(2, "0")}`);
    await readyRuntimes(["rt-blue-new", "t-blue", 30]);
    await startWith(async (_e, _t, c) => {
      if (c.operation === "ResumeExecution") resumed.push(c.payload.sharedRunId);
      return ok(c);
    }, gated);
    await eventually("20 resumes sent", async () => (resumed.length === RESUMES ? true : undefined), 20_000);
    expect(most).toBe(RESUMES);
    expect(new Set(resumed).size).toBe(RESUMES);
  });
});
