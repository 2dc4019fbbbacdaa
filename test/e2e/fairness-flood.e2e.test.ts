import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { apiClient } from "../../platform/api-client.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { createEventStore, type StoredEvent } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";

/**
 * Fairness under a flood (every service a real process, real process hosts, real nats-server and
 * Redis): on one shared runtime, tenant t-flood submits as fast as 16 clients can, up to its queue
 * cap (maxQueuedRuns, beyond it 429 tenant-queue-full), while tenant t-steady submits one run every
 * 250 ms. The steady tenant's runs are placed by admission's weighted round-robin ahead of the
 * flood's backlog, so their submission → dispatch latency is bounded by the runtime's own slots,
 * not by the flood's size. Latencies are the stream's timestamps (no client clock).
 * The figures (printed) are in docs/security.md; the bound below keeps a wide margin over them.
 */
const FLOOD = "token-tenant-flood-00001";
const STEADY = "token-tenant-steady-0001";
const MAX_QUEUED = 300;
const FLOOD_SUBMISSIONS = 400;
const STEADY_RUNS = 20;
// Measured 2026-12-02: steady p99 submission → dispatch under the flood 1 137 ms (load 10-15; 163 ms
// alone) and 2 258 ms (load ~20; 548 ms alone), the flood draining in 35-47 s. The bound keeps a
// margin for a busier machine; the relative check below does not depend on the machine.
const BOUND_DISPATCH_P99_MS = 8_000;
const dag = { steps: [{ id: "only", kind: "compute" as const, params: { durationMs: 20 } }] };
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)]!;

describe("one tenant floods submissions up to its limits; another's runs are still admitted and complete with bounded latency (all services real)", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    const redis = new Redis(inject("redisUrl"), { db: 8 });
    await redis.flushdb();
    redis.disconnect();
    const sizing = { workersPerInstance: 4, maxConcurrentRunsPerInstance: 4, localQueueCapacity: 8 };
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/8`,
      config: {
        controlPlaneId: "cp-fair",
        heartbeatIntervalMs: 250,
        dispatchTimeoutMs: 3000,
        tenants: [
          // the flood tenant starts the one shared runtime; the steady one may start none
          {
            tenantId: "t-flood",
            isolationMode: "shared",
            maxRuntimeInstances: 1,
            maxQueuedRuns: MAX_QUEUED,
            maxConcurrentRuns: 10_000,
            ...sizing,
          },
          { tenantId: "t-steady", isolationMode: "shared", maxRuntimeInstances: 0, ...sizing },
        ],
        tokens: {
          [FLOOD]: { role: "tenant", tenantId: "t-flood" },
          [STEADY]: { role: "tenant", tenantId: "t-steady" },
        },
      },
    });
  }, 240_000);
  afterAll(async () => {
    await cp?.stop();
  });

  it("the steady tenant's submission → dispatch p99 stays bounded while the flood tenant's backlog is hundreds deep", async () => {
    const flood = apiClient(cp.apiUrl, FLOOD);
    const steady = apiClient(cp.apiUrl, STEADY);
    const done = (c: typeof flood, id: string) =>
      eventually(
        `run ${id} completed`,
        async () => ((await c.run(id)).body?.status === "completed" ? true : undefined),
        240_000,
      );
    await done(flood, (await flood.submit(dag)).body.sharedRunId); // the shared runtime is up
    const steadyRuns = async (): Promise<string[]> => {
      const ids: string[] = [];
      for (let i = 0; i < STEADY_RUNS; i++) {
        const r = await steady.submit(dag);
        expect(r.status, JSON.stringify(r.body)).toBe(201);
        ids.push(r.body.sharedRunId);
        await new Promise((res) => setTimeout(res, 250));
      }
      return ids;
    };
    const baseline = await steadyRuns();
    for (const id of baseline) await done(steady, id);

    // The flood: 16 clients submit as fast as the API answers until FLOOD_SUBMISSIONS tries.
    const floodIds: string[] = [];
    const refused: number[] = [];
    let next = 0;
    const flooding = Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < FLOOD_SUBMISSIONS) {
          next++;
          const r = await flood.submit(dag);
          if (r.status === 201) floodIds.push(r.body.sharedRunId);
          else refused.push(r.status);
        }
      }),
    );
    await new Promise((res) => setTimeout(res, 500)); // the backlog is building
    const [underFlood] = await Promise.all([steadyRuns(), flooding]);
    for (const id of underFlood) await done(steady, id);
    for (const id of floodIds) await done(flood, id);

    const nc = await connectHarness({ servers: inject("natsUrl") });
    const log: StoredEvent[] = [];
    await createEventStore(nc, cp.layout).replay({ seq: 1 }, (e) => void log.push(e));
    await nc.close();
    const at = (type: string, id: string) =>
      log.find((e) => e.event.type === type && e.event.correlationId === id)!.time.getTime();
    const latency = (ids: string[], to: string) => ids.map((id) => at(to, id) - at("run.submitted", id));
    const figures = (ids: string[]) => {
      const d = latency(ids, "run.dispatched");
      const c = latency(ids, "run.completed");
      return {
        dispatchP50: pct(d, 0.5),
        dispatchP99: pct(d, 0.99),
        completedP50: pct(c, 0.5),
        completedP99: pct(c, 0.99),
      };
    };
    // How deep the flood's backlog was when each steady run was dispatched: runs of the flood
    // submitted and not yet dispatched. Fairness means steady runs did not wait for it to drain.
    const backlogAt = (t: number) =>
      floodIds.filter((id) => at("run.submitted", id) <= t && at("run.dispatched", id) > t).length;
    const backlog = underFlood.map((id) => backlogAt(at("run.dispatched", id)));
    const floodDrainMs =
      Math.max(...floodIds.map((id) => at("run.completed", id))) -
      Math.min(...floodIds.map((id) => at("run.submitted", id)));
    const result = {
      baseline: figures(baseline),
      underFlood: figures(underFlood),
      flood: { accepted: floodIds.length, refused429: refused.filter((s) => s === 429).length, drainMs: floodDrainMs },
      floodBacklogAtSteadyDispatch: { max: Math.max(...backlog), median: pct(backlog, 0.5) },
    };
    console.log(JSON.stringify(result));
    expect(refused.every((s) => s === 429)).toBe(true);
    // Exactly once for everyone.
    for (const id of [...baseline, ...underFlood, ...floodIds])
      expect(log.filter((e) => e.event.type === "run.completed" && e.event.correlationId === id)).toHaveLength(1);
    // The flood was real: most steady runs were dispatched past a deep backlog of the flood's.
    expect(pct(backlog, 0.5)).toBeGreaterThan(50);
    // Bounded, and by the runtime's slots rather than by the flood: far below the flood's own drain time.
    expect(result.underFlood.dispatchP99).toBeLessThan(BOUND_DISPATCH_P99_MS);
    expect(result.underFlood.dispatchP99).toBeLessThan(floodDrainMs / 4);
  }, 600_000);
});
