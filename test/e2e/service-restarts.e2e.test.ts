import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DroverEvent } from "../../contracts/index.ts";
import { createEventStore } from "../../streams/index.ts";
import { apiClient, chainDag } from "../../platform/api-client.ts";
import { startControlPlane, type ControlPlane, type ServiceName } from "../../platform/control-plane-processes.ts";
import { eventually } from "../support/streams.ts";

/**
 * Crash-restart of control-plane services mid-workload (all real processes, real NATS and Redis):
 * decisions resume from durable consumers and conditional appends, so no run is lost or doubled and
 * no runtime is given more runs than it has slots.
 */
describe("control-plane services killed (SIGKILL) and restarted mid-workload", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    const redis = new Redis(inject("redisUrl"), { db: 10 });
    await redis.flushdb();
    redis.disconnect();
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/10`,
      config: {
        controlPlaneId: "cp-restarts",
        heartbeatIntervalMs: 250,
        dispatchTimeoutMs: 2000,
        tenants: [
          {
            tenantId: "t-one",
            isolationMode: "dedicated",
            maxRuntimeInstances: 2,
            workersPerInstance: 2,
            maxConcurrentRunsPerInstance: 2,
            localQueueCapacity: 3,
          },
          {
            tenantId: "t-two",
            isolationMode: "dedicated",
            maxRuntimeInstances: 2,
            workersPerInstance: 1,
            maxConcurrentRunsPerInstance: 1,
            localQueueCapacity: 3,
            transport: "grpc",
          },
        ],
        tokens: {
          "token-restart-one-000001": { role: "tenant", tenantId: "t-one" },
          "token-restart-two-000001": { role: "tenant", tenantId: "t-two" },
        },
      },
    });
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it("completes every run exactly once with no slot over-committed while api, admission, provisioner and capacity are each killed and restarted", async () => {
    const clients = [
      apiClient(cp.apiUrl, "token-restart-one-000001"),
      apiClient(cp.apiUrl, "token-restart-two-000001"),
    ];
    const ids: [number, string][] = [];
    const submit = async (n: number) => {
      for (let i = 0; i < n; i++)
        for (const [k, c] of clients.entries()) ids.push([k, (await c.submit(chainDag(4, 20))).body.sharedRunId]);
    };
    const completed = async () =>
      (
        await Promise.all(
          ids.map(
            async ([k, id]) =>
              (await apiClient(cp.apiUrl, k === 0 ? "token-restart-one-000001" : "token-restart-two-000001").run(id))
                .body?.status === "completed",
          ),
        )
      ).filter(Boolean).length;
    await submit(4);
    for (const svc of ["admission", "provisioner", "capacity", "api"] as ServiceName[]) {
      await cp.kill(svc);
      await cp.restart(svc);
      for (const c of clients.keys())
        clients[c] = apiClient(cp.apiUrl, c === 0 ? "token-restart-one-000001" : "token-restart-two-000001");
      await submit(2);
    }
    await eventually(
      "every run completed",
      async () => ((await completed()) === ids.length ? true : undefined),
      180_000,
    );

    const nc = await connectHarness({ servers: inject("natsUrl") });
    try {
      const events: DroverEvent[] = [];
      await createEventStore(nc, cp.layout).replay({ seq: 1 }, (e) => {
        events.push(e.event);
      });
      const completions = new Map<string, number>();
      for (const e of events)
        if (e.type === "run.completed") completions.set(e.correlationId, (completions.get(e.correlationId) ?? 0) + 1);
      expect(ids.length).toBe(24);
      for (const [, id] of ids) expect(completions.get(id), id).toBe(1);
      const overCommit = events.filter(
        (e) => e.type === "run.dispatch-failed" && e.data.reason.code === "local-queue-full",
      );
      expect(overCommit).toEqual([]);
    } finally {
      await nc.close();
    }
  });
});
