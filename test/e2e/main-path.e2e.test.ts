import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { apiClient, chainDag } from "../../platform/api-client.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { createEventStore } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";

/**
 * The main path with every service as a real process (api, admission, capacity, provisioner,
 * recovery), real process hosts, real nats-server and Redis: a tenant's HTTP submission ends up
 * executing on a runtime the tenant may use, started by scale-out and published only after every
 * readiness layer passed.
 */
const TOKENS = {
  "token-tenant-blue-000001": { role: "tenant", tenantId: "t-blue" },
  "token-tenant-green-00001": { role: "tenant", tenantId: "t-green" },
  "token-tenant-shared-0001": { role: "tenant", tenantId: "t-shared" },
  "token-tenant-hybfb-00001": { role: "tenant", tenantId: "t-hyb-fb" },
  "token-tenant-hybno-00001": { role: "tenant", tenantId: "t-hyb-no" },
  "token-operator-00000001": { role: "operator", name: "ops" },
} as const;

describe("main path: API → admission → scale-out → process runtime → completion (all services real)", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    const redis = new Redis(inject("redisUrl"), { db: 9 });
    await redis.flushdb();
    redis.disconnect();
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/9`,
      config: {
        controlPlaneId: "cp-e2e",
        heartbeatIntervalMs: 250,
        dispatchTimeoutMs: 2000,
        tenants: [
          {
            tenantId: "t-blue",
            isolationMode: "dedicated",
            maxRuntimeInstances: 1,
            workersPerInstance: 2,
            maxConcurrentRunsPerInstance: 2,
            localQueueCapacity: 4,
            transport: "http",
          },
          {
            tenantId: "t-green",
            isolationMode: "dedicated",
            maxRuntimeInstances: 1,
            workersPerInstance: 1,
            maxConcurrentRunsPerInstance: 1,
            localQueueCapacity: 4,
            transport: "grpc",
          },
          {
            tenantId: "t-shared",
            isolationMode: "shared",
            maxRuntimeInstances: 1,
            workersPerInstance: 2,
            maxConcurrentRunsPerInstance: 2,
            localQueueCapacity: 8,
          },
          // hybrid tenants that may not start runtimes of their own: only shared capacity can serve them, and only with fallback
          { tenantId: "t-hyb-fb", isolationMode: "hybrid", allowSharedFallback: true, maxRuntimeInstances: 0 },
          { tenantId: "t-hyb-no", isolationMode: "hybrid", allowSharedFallback: false, maxRuntimeInstances: 0 },
        ],
        tokens: TOKENS,
      },
    });
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it("completes every tenant's runs exactly once, each on a runtime of its own tenant, over HTTP and gRPC runtimes", async () => {
    const blue = apiClient(cp.apiUrl, "token-tenant-blue-000001");
    const green = apiClient(cp.apiUrl, "token-tenant-green-00001");
    const ids: [ReturnType<typeof apiClient>, string][] = [];
    for (let i = 0; i < 3; i++) {
      for (const c of [blue, green]) {
        const r = await c.submit(chainDag(5, 5, 3));
        expect(r.status).toBe(201);
        ids.push([c, r.body.sharedRunId]);
      }
    }
    for (const [c, id] of ids) {
      const view = await eventually(
        `run ${id} completed`,
        async () => {
          const r = await c.run(id);
          return r.body?.status === "completed" ? r.body : undefined;
        },
        90_000,
      );
      expect(view.placement.runtimeInstanceId.startsWith(view.tenantId === "t-blue" ? "rt-t-blue" : "rt-t-green")).toBe(
        true,
      );
      const events = (await c.events(id)).body.events as { event: { type: string } }[];
      expect(events.filter((e) => e.event.type === "run.completed")).toHaveLength(1);
      expect(events.filter((e) => e.event.type === "exec.completed")).toHaveLength(1);
    }
    // another tenant's run is invisible
    expect((await green.run(ids[0]![1])).status).toBe(404);
  });

  it("runs a shared tenant on a shared runtime, and a hybrid tenant on it only when shared fallback is allowed", async () => {
    const shared = apiClient(cp.apiUrl, "token-tenant-shared-0001");
    const fb = apiClient(cp.apiUrl, "token-tenant-hybfb-00001");
    const no = apiClient(cp.apiUrl, "token-tenant-hybno-00001");
    const s1 = (await shared.submit(chainDag(3, 5))).body.sharedRunId;
    const f1 = (await fb.submit(chainDag(3, 5))).body.sharedRunId;
    const n1 = (await no.submit(chainDag(3, 5))).body.sharedRunId;
    const sv = await eventually(
      "shared run completed",
      async () => {
        const r = await shared.run(s1);
        return r.body?.status === "completed" ? r.body : undefined;
      },
      90_000,
    );
    const fv = await eventually(
      "hybrid fallback run completed",
      async () => {
        const r = await fb.run(f1);
        return r.body?.status === "completed" ? r.body : undefined;
      },
      90_000,
    );
    expect(fv.placement.runtimeInstanceId).toBe(sv.placement.runtimeInstanceId);
    // the hybrid tenant without fallback never lands on the shared runtime: it waits, with the reason visible
    const nv = await eventually("hybrid without fallback queued", async () => {
      const r = await no.run(n1);
      return r.body?.status === "queued" ? r.body : undefined;
    });
    expect(nv.placement).toBeNull();
    expect(nv.localRunIds).toEqual([]);
    expect(nv.lastReason).toBe("no-visible-capacity");
    // neither hybrid tenant may start a runtime (maxRuntimeInstances 0): admission never asked for one
    for (const [c, id] of [
      [no, n1],
      [fb, f1],
    ] as const) {
      expect(
        ((await c.events(id)).body.events as { event: { type: string } }[]).map((e) => e.event.type),
      ).not.toContain("run.scale-out-requested");
    }
  });

  it("published each runtime's capacity only after resource, host, endpoint and command passed, in that order", async () => {
    const nc = await connectHarness({ servers: inject("natsUrl") });
    try {
      const store = createEventStore(nc, cp.layout);
      const byRuntime = new Map<string, string[]>();
      await store.replay(
        { seq: 1 },
        (e) => {
          const rt = e.subject.split(".")[cp.layout.eventPrefix.split(".").length + 1]!;
          const label =
            e.event.type === "runtime.readiness-layer-passed" ? `layer:${e.event.data.layer}` : e.event.type;
          byRuntime.set(rt, [...(byRuntime.get(rt) ?? []), label]);
        },
        { filter: `${cp.layout.eventPrefix}.runtime.>` },
      );
      expect(byRuntime.size).toBe(3);
      for (const events of byRuntime.values()) {
        const order = [
          "runtime.registered",
          "runtime.host-started",
          "layer:resource",
          "layer:host",
          "layer:endpoint",
          "layer:command",
          "runtime.endpoint-published",
          "runtime.capacity-published",
        ];
        expect(events.filter((e) => order.includes(e))).toEqual(order);
      }
    } finally {
      await nc.close();
    }
  });
});
