import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { apiClient } from "../../platform/api-client.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { createEventStore, type StoredEvent } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";

/**
 * Weights shift shares as configured (every service a real process, real process hosts, real
 * nats-server and Redis; real admission, not the pure order): tenants t-heavy (weight 3) and
 * t-light (weight 1) each submit BURST runs at once onto one shared runtime (4 slots + 16 local
 * queue, the last 2 kept: the default `sharedRuntimeHeadroom`). Admission gives each free place to the
 * tenant with the smallest virtual time (each placement adds 1 / weight), so while both have a
 * backlog t-heavy's runs are dispatched 3 times as often. The share is counted over the dispatches
 * made while both tenants still had runs waiting (the stream's order, no client clock).
 * History: ordering by places held per unit of weight gave 2.4-2.85 (a CI run failed at 2.4,
 * 2026-12-03): the tenant behind its share went first in every pass, so its runs sat at the front
 * of the runtime's queue, finished sooner and freed their places sooner. With the kept places on,
 * 2.23-3.14 over 14 runs (2026-12-04): t-light's runs, started first by the runtime (fewest going),
 * left it holding fewer than 2, so it took the kept places ahead of its turn, each moving the virtual
 * clock past t-heavy, whose lag was forgiven; kept places now go only to a tenant that is due
 * (docs/decisions.md).
 */
const HEAVY = "token-tenant-heavy-00001";
const LIGHT = "token-tenant-light-00001";
const BURST = 160;
/** Runs waiting per tenant for a dispatch to count as contended (more than one pass's worth: 8 in flight). */
const BACKLOG = 10;
/**
 * Each run holds its place for 200 ms (a timer: no CPU), so the runtime's 20 places turn over at most
 * ~20 runs/s and the bursts pile up behind them however slowly a loaded API takes them in. With 20 ms
 * runs the contended sample depended on the API's pace: 121 of 320 dispatches at load ~30
 * (2026-12-06), where one dispatch moved the ratio by ~0.15 (95/26 = 3.65 failed the bound; 94/27 =
 * 3.48). With 200 ms runs, same load: 184 and 183 contended, ratios 3.09 and 2.98.
 */
const dag = { steps: [{ id: "only", kind: "compute" as const, params: { durationMs: 200 } }] };

describe("two tenants flooding one shared runtime get dispatches in proportion to their configured weights (all services real)", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    const redis = new Redis(inject("redisUrl"), { db: 6 });
    await redis.flushdb();
    redis.disconnect();
    const sizing = { workersPerInstance: 4, maxConcurrentRunsPerInstance: 4, localQueueCapacity: 16 };
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/6`,
      config: {
        controlPlaneId: "cp-weights",
        heartbeatIntervalMs: 250,
        staleHeartbeatMs: 5_000, // shares are measured here, not failure detection (a loaded machine)
        dispatchTimeoutMs: 3000,
        api: { rateLimit: { max: 1_000_000 } },
        tenants: [
          // t-heavy starts the one shared runtime; t-light may start none
          { tenantId: "t-heavy", weight: 3, maxRuntimeInstances: 1, maxQueuedRuns: 1000, ...sizing },
          { tenantId: "t-light", weight: 1, maxRuntimeInstances: 0, maxQueuedRuns: 1000, ...sizing },
        ],
        tokens: {
          [HEAVY]: { role: "tenant", tenantId: "t-heavy" },
          [LIGHT]: { role: "tenant", tenantId: "t-light" },
        },
      },
    });
  }, 240_000);
  afterAll(async () => {
    await cp?.stop();
  });

  it("while both have a backlog, the weight-3 tenant's runs are dispatched about 3 times as often as the weight-1 tenant's", async () => {
    const heavy = apiClient(cp.apiUrl, HEAVY);
    const light = apiClient(cp.apiUrl, LIGHT);
    const done = (c: typeof heavy, id: string) =>
      eventually(
        `run ${id} completed`,
        async () => ((await c.run(id)).body?.status === "completed" ? true : undefined),
        300_000,
      );
    await done(heavy, (await heavy.submit(dag)).body.sharedRunId); // the shared runtime is up
    const burst = async (c: typeof heavy) => {
      const ids: string[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next++ < BURST) {
            const r = await c.submit(dag);
            expect(r.status, JSON.stringify(r.body)).toBe(201);
            ids.push(r.body.sharedRunId);
          }
        }),
      );
      return ids;
    };
    const [heavyIds, lightIds] = await Promise.all([burst(heavy), burst(light)]);
    for (const id of heavyIds) await done(heavy, id);
    for (const id of lightIds) await done(light, id);

    const nc = await connectHarness({ servers: inject("natsUrl") });
    const log: StoredEvent[] = [];
    await createEventStore(nc, cp.layout).replay({ seq: 1 }, (e) => void log.push(e));
    await nc.close();
    const tenantOf = new Map<string, "heavy" | "light">([
      ...heavyIds.map((id) => [id, "heavy"] as const),
      ...lightIds.map((id) => [id, "light"] as const),
    ]);
    const completions = new Map<string, number>();
    for (const e of log)
      if (e.event.type === "run.completed")
        completions.set(e.event.correlationId, (completions.get(e.event.correlationId) ?? 0) + 1);
    for (const id of tenantOf.keys()) expect(completions.get(id), id).toBe(1); // exactly once

    // Walk the stream: submitted adds to a tenant's backlog, dispatched takes from it. Count the
    // dispatches made while both tenants had a backlog (at least BACKLOG runs waiting each), i.e. the
    // runtime full and admission choosing between them. (Counting only after both bursts were in made
    // the sample depend on how fast the API took the bursts: at CI's load 74 of the 320 dispatches.)
    const waiting = { heavy: 0, light: 0 };
    const share = { heavy: 0, light: 0 };
    for (const e of log) {
      const t = tenantOf.get(e.event.correlationId);
      if (!t) continue;
      if (e.event.type === "run.submitted") waiting[t]++;
      if (e.event.type !== "run.dispatched") continue;
      const contended = waiting.heavy >= BACKLOG && waiting.light >= BACKLOG;
      waiting[t]--;
      if (contended) share[t]++;
    }
    const ratio = share.heavy / share.light;
    // For a ratio out of bounds: dispatches refused (each placed again, so dispatched twice) by tenant and reason.
    const failed: Record<string, number> = {};
    for (const e of log) {
      const t = tenantOf.get(e.event.correlationId);
      if (t && e.event.type === "run.dispatch-failed") {
        const k = `${t} ${e.event.data.reason.code}`;
        failed[k] = (failed[k] ?? 0) + 1;
      }
    }
    console.log(JSON.stringify({ contendedDispatches: share, ratio: Math.round(ratio * 100) / 100, failed }));
    expect(share.heavy + share.light).toBeGreaterThan(BURST / 2);
    expect(ratio).toBeGreaterThan(2.4);
    expect(ratio).toBeLessThan(3.6);
  }, 600_000);
});
