import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DroverEvent } from "../../contracts/index.ts";
import { apiClient, chainDag } from "../../platform/api-client.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { redisReservations } from "../../platform/reservations.ts";
import { createEventStore, type StoredEvent } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";

/**
 * Hybrid isolation end to end (admission-and-capacity.md "Visibility", "Admission", "Scale-out"),
 * every service a real process, real process hosts, real nats-server and Redis. A hybrid tenant
 * sees its own runtimes and, only with allowSharedFallback, shared ones; never another tenant's
 * dedicated runtime. With no visible capacity it scales out a runtime of its own (its prefix,
 * policy `hybrid`, owned by it); preferDedicatedCapacity puts its own runtime first while it has
 * room; once its own is full and at maxRuntimeInstances, it falls back to shared capacity if
 * allowed, else waits queued (asking for no runtime at the limit) until its own frees up.
 */
const TOKENS = {
  "token-tenant-hyba-000001": { role: "tenant", tenantId: "t-hyb-a" },
  "token-tenant-hybb-000001": { role: "tenant", tenantId: "t-hyb-b" },
  "token-tenant-ded-0000001": { role: "tenant", tenantId: "t-ded" },
  "token-tenant-shared-0001": { role: "tenant", tenantId: "t-shared" },
  "token-operator-00000001": { role: "operator", name: "ops" },
} as const;
// One slot per hybrid runtime (1 concurrent run, no local queue), so "full" is one run in flight.
const ONE_SLOT = {
  maxRuntimeInstances: 1,
  workersPerInstance: 1,
  maxConcurrentRunsPerInstance: 1,
  localQueueCapacity: 0,
};
// The dedicated and shared runtimes have many more free slots: ranking by slots alone would pick them.
const ROOMY = { maxRuntimeInstances: 1, workersPerInstance: 2, maxConcurrentRunsPerInstance: 4, localQueueCapacity: 4 };
const own = (tenantId: string) => new RegExp(`^rt-${tenantId}-[a-z0-9]+$`);

describe("hybrid tenant: own runtime by scale-out, preferred while it has room, shared only as its fallback (all services real)", () => {
  let cp: ControlPlane;
  const clients = () => ({
    a: apiClient(cp.apiUrl, "token-tenant-hyba-000001"),
    b: apiClient(cp.apiUrl, "token-tenant-hybb-000001"),
    ded: apiClient(cp.apiUrl, "token-tenant-ded-0000001"),
    shared: apiClient(cp.apiUrl, "token-tenant-shared-0001"),
  });
  type Client = ReturnType<typeof apiClient>;
  type View = { status: string; tenantId: string; placement: { runtimeInstanceId: string } | null };
  const completed = (c: Client, id: string) =>
    eventually<View>(
      `run ${id} completed`,
      async () => {
        const r = await c.run(id);
        return r.body?.status === "completed" ? r.body : undefined;
      },
      90_000,
    );
  const placed = (c: Client, id: string) =>
    eventually<View>(
      `run ${id} dispatched`,
      async () => {
        const r = await c.run(id);
        return r.body?.placement && ["dispatched", "started"].includes(r.body.status) ? r.body : undefined;
      },
      90_000,
    );
  const submit = async (c: Client, steps: number, stepMs: number) => {
    const r = await c.submit(chainDag(steps, stepMs));
    expect(r.status).toBe(201);
    return r.body.sharedRunId as string;
  };
  const log = async (filter: string): Promise<StoredEvent[]> => {
    const nc = await connectHarness({ servers: inject("natsUrl") });
    try {
      const out: StoredEvent[] = [];
      await createEventStore(nc, cp.layout).replay(
        { seq: 1 },
        (e) => {
          out.push(e);
        },
        { filter: `${cp.layout.eventPrefix}.${filter}` },
      );
      return out;
    } finally {
      await nc.close();
    }
  };
  const ofType = <T extends DroverEvent["type"]>(events: StoredEvent[], type: T) =>
    events.filter((e): e is StoredEvent<Extract<DroverEvent, { type: T }>> => e.event.type === type);
  /**
   * Resolves once admission would see a free slot on the runtime: the capacity view says it can
   * accept a run and no reservation is held on it (a dispatched run keeps its slot reserved until
   * the runtime's heartbeats show it, so a one-slot runtime stays full for ~3 beats after a run).
   */
  const hasRoom = async (rt: string) => {
    const redis = new Redis(inject("redisUrl"), { db: 14 });
    const ops = apiClient(cp.apiUrl, "token-operator-00000001");
    try {
      await eventually(`${rt} has a free slot`, async () => {
        const entry = (
          (await ops.get("/v1/capacity")).body.runtimes as { runtimeInstanceId: string; canAcceptRun: boolean }[]
        ).find((e) => e.runtimeInstanceId === rt);
        return entry?.canAcceptRun && (await redisReservations(redis, "cp-e2e-hyb").count(rt, Date.now())) === 0
          ? true
          : undefined;
      });
    } finally {
      redis.disconnect();
    }
  };
  /** runtimeInstanceId of every `run.dispatched` of one run, in order. */
  const dispatchedTo = async (tenantId: string, id: string) =>
    ofType(await log(`run.${tenantId}.${id}.>`), "run.dispatched").map((e) => e.event.data.runtimeInstanceId);

  beforeAll(async () => {
    const redis = new Redis(inject("redisUrl"), { db: 14 });
    await redis.flushdb();
    redis.disconnect();
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/14`,
      config: {
        controlPlaneId: "cp-e2e-hyb",
        heartbeatIntervalMs: 250,
        dispatchTimeoutMs: 2000,
        tenants: [
          {
            tenantId: "t-hyb-a",
            isolationMode: "hybrid",
            preferDedicatedCapacity: true,
            allowSharedFallback: true,
            ...ONE_SLOT,
          },
          {
            tenantId: "t-hyb-b",
            isolationMode: "hybrid",
            preferDedicatedCapacity: true,
            allowSharedFallback: false,
            ...ONE_SLOT,
          },
          { tenantId: "t-ded", isolationMode: "dedicated", ...ROOMY },
          { tenantId: "t-shared", isolationMode: "shared", ...ROOMY },
        ],
        tokens: TOKENS,
      },
    });
  });
  afterAll(async () => {
    await cp?.stop();
  });

  const runtimes: Record<"a" | "b" | "ded" | "shared", string> = { a: "", b: "", ded: "", shared: "" };

  it("from zero capacity scales out a hybrid runtime of its own (its prefix, policy hybrid, owned by it) and runs there", async () => {
    const { a, b, ded } = clients();
    const a1 = await submit(a, 1, 50);
    const b1 = await submit(b, 1, 50);
    const d1 = await submit(ded, 1, 50);
    runtimes.a = (await completed(a, a1)).placement!.runtimeInstanceId;
    runtimes.b = (await completed(b, b1)).placement!.runtimeInstanceId;
    runtimes.ded = (await completed(ded, d1)).placement!.runtimeInstanceId;
    expect(runtimes.a).toMatch(own("t-hyb-a"));
    expect(runtimes.b).toMatch(own("t-hyb-b"));
    expect(runtimes.ded).toMatch(own("t-ded"));
    // every dispatch attempt of the hybrid runs went to the tenant's own runtime
    expect(await dispatchedTo("t-hyb-a", a1)).toEqual([runtimes.a]);
    expect(await dispatchedTo("t-hyb-b", b1)).toEqual([runtimes.b]);

    // the scale-out asked for a hybrid runtime under the tenant's prefix, and got one owned by the tenant
    for (const [tenantId, fallback, rt] of [
      ["t-hyb-a", true, runtimes.a],
      ["t-hyb-b", false, runtimes.b],
    ] as const) {
      const requested = ofType(await log(`scaleout.${tenantId}.>`), "scaleout.requested");
      expect(requested.length).toBeGreaterThanOrEqual(1);
      for (const r of requested) {
        expect(r.event.data.policy).toEqual({
          isolationMode: "hybrid",
          allowSharedFallback: fallback,
          runtimeInstanceIdPrefix: `rt-${tenantId}`,
          maxRuntimeInstances: 1,
        });
        expect(r.event.data.reason.code).toBe("no-visible-capacity");
      }
      const registered = ofType(await log(`runtime.${rt}.>`), "runtime.registered");
      expect(registered).toHaveLength(1);
      expect(registered[0]!.event.data).toMatchObject({
        isolationMode: "hybrid",
        tenantId,
        allowSharedFallback: fallback,
      });
      expect(requested.map((r) => r.event.data.requestId)).toContain(registered[0]!.event.data.scaleOutRequestId);
    }
  });

  it("prefers its own runtime over a roomier shared one, falls back to shared when its own is full at its limit, and never scales out again for it", async () => {
    const { a, shared } = clients();
    const x1 = await submit(shared, 1, 50);
    runtimes.shared = (await completed(shared, x1)).placement!.runtimeInstanceId;
    expect(runtimes.shared).toMatch(own("t-shared"));
    const requestsBefore = ofType(await log("scaleout.t-hyb-a.>"), "scaleout.requested").length;

    // own runtime has 1 free slot, shared has 8 and the other tenant's dedicated has 8: own wins
    await hasRoom(runtimes.a);
    const a2 = await submit(a, 1, 8000);
    expect((await placed(a, a2)).placement!.runtimeInstanceId).toBe(runtimes.a);
    // own runtime now full (and the tenant at maxRuntimeInstances): the next run falls back to shared
    const a3 = await submit(a, 1, 50);
    expect((await completed(a, a3)).placement!.runtimeInstanceId).toBe(runtimes.shared);
    expect(await dispatchedTo("t-hyb-a", a3)).toEqual([runtimes.shared]);
    expect((await completed(a, a2)).placement!.runtimeInstanceId).toBe(runtimes.a);
    expect(await dispatchedTo("t-hyb-a", a2)).toEqual([runtimes.a]);
    // shared capacity was visible, so the fallback asked for no runtime
    expect(ofType(await log("scaleout.t-hyb-a.>"), "scaleout.requested")).toHaveLength(requestsBefore);
  });

  it("without shared fallback waits queued when its own runtime is full at its limit, asks for no other runtime, then runs on its own", async () => {
    const { b } = clients();
    await hasRoom(runtimes.b);
    const requestsBefore = ofType(await log("scaleout.t-hyb-b.>"), "scaleout.requested").length;
    const b2 = await submit(b, 1, 8000);
    expect((await placed(b, b2)).placement!.runtimeInstanceId).toBe(runtimes.b);
    // shared and dedicated runtimes have room, but neither is visible to it
    const b3 = await submit(b, 1, 50);
    const queued = await eventually<View & { lastReason: string }>("hybrid run without fallback queued", async () => {
      const r = await b.run(b3);
      return r.body?.status === "queued" ? r.body : undefined;
    });
    expect(queued.lastReason).toBe("no-visible-capacity");

    expect((await completed(b, b2)).placement!.runtimeInstanceId).toBe(runtimes.b);
    expect((await completed(b, b3)).placement!.runtimeInstanceId).toBe(runtimes.b);
    expect(await dispatchedTo("t-hyb-b", b3)).toEqual([runtimes.b]);
    // Its one runtime (maxRuntimeInstances 1) was alive in admission's view all along: admission asked
    // for no other, which the provisioner could only have rejected at the limit (docs/decisions.md).
    expect(ofType(await log(`run.t-hyb-b.${b3}.>`), "run.scale-out-requested")).toEqual([]);
    expect(ofType(await log("scaleout.t-hyb-b.>"), "scaleout.requested")).toHaveLength(requestsBefore);
  });

  it("never dispatched a hybrid tenant's run to another tenant's runtime, and never dispatched the strict one to shared capacity", async () => {
    const allowed = { "t-hyb-a": [runtimes.a, runtimes.shared], "t-hyb-b": [runtimes.b] } as const;
    for (const [tenantId, ok] of Object.entries(allowed)) {
      const dispatched = ofType(await log(`run.${tenantId}.*.dispatched`), "run.dispatched");
      expect(dispatched.length).toBeGreaterThanOrEqual(3);
      for (const e of dispatched) expect(ok).toContain(e.event.data.runtimeInstanceId);
    }
    // the hybrid runtimes and the scale-outs are the tenants' own: 4 runtimes, one per tenant, none extra
    const registered = ofType(await log("runtime.*.registered"), "runtime.registered").map((e) =>
      e.subject.split(".").at(-2),
    );
    expect(registered.sort()).toEqual([runtimes.a, runtimes.b, runtimes.ded, runtimes.shared].sort());
  });
});
