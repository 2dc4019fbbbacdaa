import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { EventOf } from "../../contracts/index.ts";
import { apiClient } from "../../platform/api-client.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { createEventStore, type StoredEvent } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";

/**
 * A schedule through the whole product (every service a real process, real process hosts, real
 * nats-server and Redis): created over HTTP, fired every second while the scheduler process is
 * SIGKILLed and restarted every 5 s; every nominal second starts exactly one run (those that fell
 * while the scheduler was down start late, inside the catch-up window), and every run completes
 * exactly once on a runtime.
 */
const TOKEN = "token-schedules-e2e-0001";
const KILLS = 3;
const KILL_EVERY_MS = 5000;

describe("a per-second schedule with its scheduler SIGKILLed every 5 s starts one run per nominal second, each completed once (all services real)", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    const redis = new Redis(inject("redisUrl"), { db: 15 });
    await redis.flushdb();
    redis.disconnect();
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/15`,
      config: {
        controlPlaneId: "cp-sched",
        heartbeatIntervalMs: 250,
        dispatchTimeoutMs: 3000,
        tenants: [
          {
            tenantId: "t-sched",
            isolationMode: "dedicated",
            maxRuntimeInstances: 1,
            workersPerInstance: 4,
            maxConcurrentRunsPerInstance: 4,
            localQueueCapacity: 16,
          },
        ],
        tokens: { [TOKEN]: { role: "tenant", tenantId: "t-sched" } },
      },
    });
  }, 240_000);
  afterAll(async () => {
    await cp?.stop();
  });

  it("exactly one run per nominal second, none twice, all completed", async () => {
    const api = apiClient(cp.apiUrl, TOKEN);
    const created = await api.post("/v1/schedules", {
      scheduleId: "every-second",
      spec: { intervalMs: 1000 },
      dag: { name: "tick", steps: [{ id: "only", kind: "compute", params: { durationMs: 20 } }] },
      overlap: "allow-all",
      catchUpMs: 30_000,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    for (let k = 0; k < KILLS; k++) {
      await new Promise((r) => setTimeout(r, KILL_EVERY_MS));
      await cp.kill("scheduler");
      await new Promise((r) => setTimeout(r, 500));
      await cp.restart("scheduler");
    }
    const nc = await connectHarness({ servers: inject("natsUrl") });
    const store = createEventStore(nc, cp.layout);
    const read = async () => {
      const log: StoredEvent[] = [];
      await store.replay({ seq: 1 }, (e) => void log.push(e));
      return log;
    };
    let log = await read();
    const fired = () =>
      log.filter((e): e is StoredEvent<EventOf<"schedule.fired">> => e.event.type === "schedule.fired");
    // The last scheduler caught up: it fired a nominal time after its restart (the fires of the
    // downtime came first, late but inside the catch-up window). Then the schedule is paused.
    const restartedAt = Date.now();
    await eventually(
      "the restarted scheduler caught up",
      async () => {
        log = await read();
        return fired().some((f) => Date.parse(f.event.data.nominalAt) >= restartedAt) ? true : undefined;
      },
      60_000,
    );
    expect((await api.post("/v1/schedules/every-second/pause", undefined)).status).toBe(200);
    log = await read();
    const runIds = fired().map((f) => f.event.data.sharedRunId);
    await eventually(
      `${runIds.length} scheduled runs completed`,
      async () => {
        log = await read();
        const done = new Set(log.filter((e) => e.event.type === "run.completed").map((e) => e.event.correlationId));
        return runIds.every((id) => done.has(id)) ? true : undefined;
      },
      120_000,
    );
    await nc.close();
    const nominals = fired().map((f) => Date.parse(f.event.data.nominalAt));
    console.log(
      JSON.stringify({
        fires: nominals.length,
        skipped: log.filter((e) => e.event.type === "schedule.skipped").length,
      }),
    );
    // From creation to the catch-up: every second fired once, the downtimes' seconds included.
    expect(nominals.length).toBeGreaterThanOrEqual((KILLS * KILL_EVERY_MS) / 1000);
    expect(new Set(nominals).size).toBe(nominals.length);
    nominals.forEach((n, i) => i > 0 && expect(n - nominals[i - 1]!).toBe(1000));
    expect(log.filter((e) => e.event.type === "schedule.skipped")).toHaveLength(0);
    for (const id of runIds) {
      expect(log.filter((e) => e.event.type === "run.submitted" && e.event.correlationId === id)).toHaveLength(1);
      expect(log.filter((e) => e.event.type === "run.completed" && e.event.correlationId === id)).toHaveLength(1);
    }
  }, 300_000);
});
