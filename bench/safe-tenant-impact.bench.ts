/**
 * `safe_tenant_p99_impact` (issue #15 item 5; the design's target ≤ 1.05): how much an incident on
 * other tenants costs a tenant it does not touch. End to end through the public API, every service a
 * process as `make run` starts them (read models on), process hosts with a warm pool of 4, private
 * servers. Five dedicated tenants: four (t-hit1..4) keep 3 runs of 40 × 20 ms steps in flight each;
 * the safe tenant submits a 5 × 10 ms chain every 100 ms for an 8 s window (open loop). In an
 * incident window the four hit tenants' runtimes are SIGKILLed 2 s in (detection, fence, replacement,
 * resume all happen in the window); a calm window is the same without the kill. Windows alternate
 * calm/incident in pairs (BENCH_SAFE_PAIRS, default 2, order swapped each pair) on one control plane;
 * the figure is the median over pairs of (safe p99 in the incident ÷ safe p99 in the calm window),
 * p99 of submitted → completed (stored timestamps). Every run of every tenant must complete.
 */
import { availableParallelism, loadavg } from "node:os";
import { SERVICES, startControlPlane } from "../platform/control-plane-processes.ts";
import { startFerret, startNats, startRedis } from "../platform/local-servers.ts";
import { connectHarness } from "../platform/nats-auth/server-keys.ts";
import { createEventStore, type StoredEvent } from "../streams/index.ts";
import { eventually } from "../test/support/streams.ts";
import { median, quantile, recordMetrics, round } from "./support/results.ts";
import {
  HIT,
  latencies,
  runtimePids,
  SAFE,
  steadyLoad,
  tenantClient,
  TENANTS,
  tokenOf,
} from "./support/safe-tenant.ts";

const PAIRS = Number(process.env.BENCH_SAFE_PAIRS ?? 2);
const WINDOW_MS = 8_000;
const KILL_AT_MS = 2_000;
const POOL = 4;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const servers = [await startNats(), await startRedis(), await startFerret()];
const [nats, redis, ferret] = servers;
try {
  const cp = await startControlPlane({
    natsUrl: nats!.url,
    redisUrl: redis!.url,
    mongoUrl: ferret!.url,
    services: [...SERVICES, "forensics"],
    config: {
      controlPlaneId: "cp-safe-tenant",
      heartbeatIntervalMs: 1000,
      dispatchTimeoutMs: 3000,
      warmPool: { process: POOL },
      tenants: TENANTS,
      tokens: Object.fromEntries(TENANTS.map((t) => [tokenOf(t.tenantId), { role: "tenant", tenantId: t.tenantId }])),
    },
  });
  const nc = await connectHarness({ servers: nats!.url });
  try {
    const store = createEventStore(nc, cp.layout);
    const log = async () => {
      const all: StoredEvent[] = [];
      await store.replay({ seq: 1 }, (e) => void all.push(e));
      return all;
    };
    const safe = await tenantClient(cp.apiUrl, SAFE);
    const hit = await Promise.all(HIT.map((t) => tenantClient(cp.apiUrl, t)));
    // Warm-up: every tenant's runtime is up and has run a chain; the pool is full.
    await Promise.all([safe, ...hit].map(async (c) => c.ends.ended(await c.submit(3, 0), 120_000)));
    const poolFull = async () => {
      const all = await log();
      const n = (type: string) => all.filter((e) => e.event.type === type).length;
      return n("runtime.pool-member-ready") - n("runtime.pool-member-claimed") >= POOL ? true : undefined;
    };
    await eventually(`${POOL} warm pool members ready`, poolFull, 120_000);
    const loads = hit.map((c) => steadyLoad(c, 3, 40, 20));

    const windows: { kind: "calm" | "incident"; ids: string[]; load: number }[] = [];
    for (let p = 0; p < PAIRS; p++)
      for (const kind of p % 2 ? (["incident", "calm"] as const) : (["calm", "incident"] as const)) {
        await eventually(`${POOL} warm pool members ready`, poolFull, 120_000);
        const w = { kind, ids: [] as string[], load: round(loadavg()[0]!, 1) };
        const t0 = Date.now();
        const pids = kind === "incident" ? await runtimePids(store, await log(), HIT) : [];
        const submits: Promise<void>[] = [];
        for (let i = 0; Date.now() - t0 < WINDOW_MS; i++) {
          submits.push(safe.submit(5, 10).then((id) => void w.ids.push(id)));
          if (pids.length && Date.now() - t0 >= KILL_AT_MS)
            for (const pid of pids.splice(0)) process.kill(pid, "SIGKILL");
          await sleep(t0 + (i + 1) * 100 - Date.now());
        }
        await Promise.all(submits);
        for (const id of w.ids) await safe.ends.ended(id, 120_000);
        windows.push(w);
        console.log(`[safe-tenant] ${kind} window: ${w.ids.length} safe runs, load ${w.load}`);
      }
    for (const l of loads) l.stop();
    const hitRuns = await Promise.all(loads.map((l) => l.done));
    const all = await log();
    const fenced = all.filter((e) => e.event.type === "runtime.fenced").length;
    // The incident happened: each incident window's four kills were fenced (no figure otherwise).
    if (fenced < HIT.length * PAIRS) throw new Error(`${fenced} runtimes fenced, ${HIT.length * PAIRS} killed`);
    const stats = windows.map((w) => {
      const xs = latencies(all, w.ids);
      const dispatch = quantile(latencies(all, w.ids, "run.dispatched"), 0.99);
      return { ...w, p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), dispatch };
    });
    for (const s of stats)
      console.log(
        `[safe-tenant] ${s.kind}: p50 ${s.p50} ms, p99 ${s.p99} ms, dispatch p99 ${s.dispatch} ms (load ${s.load})`,
      );
    const ratiosOf = (f: (s: (typeof stats)[number]) => number) =>
      Array.from({ length: PAIRS }, (_, p) => {
        const pair = stats.slice(2 * p, 2 * p + 2);
        return f(pair.find((s) => s.kind === "incident")!) / f(pair.find((s) => s.kind === "calm")!);
      });
    const ratios = ratiosOf((s) => s.p99);
    const dispatchRatios = ratiosOf((s) => s.dispatch);
    const describe = (kind: string) =>
      stats
        .filter((s) => s.kind === kind)
        .map((s) => `${s.p50}/${s.p99}`)
        .join(", ");
    await recordMetrics({
      safe_tenant_p99_impact: {
        unit: "ratio",
        value: round(median(ratios)),
        note: `safe tenant's p99 submitted → completed during an incident (4 other tenants' runtimes SIGKILLed) ÷ in a calm window, median of ${PAIRS} pair(s) (${ratios.map((r) => round(r)).join(", ")}); safe p50/p99 ms calm ${describe("calm")}, incident ${describe("incident")}; a 5 × 10 ms chain every 100 ms for 8 s, 4 hit tenants × 3 runs of 40 × 20 ms in flight (${hitRuns.reduce((a, b) => a + b, 0)} completed, ${fenced} runtimes fenced), warm pool ${POOL}, process hosts; ${availableParallelism()} cores, load average ${windows.map((w) => w.load).join("/")} at the windows' starts`,
      },
      safe_tenant_dispatch_p99_impact: {
        unit: "ratio",
        value: round(median(dispatchRatios)),
        note: `the same windows, the safe tenant's p99 submitted → dispatched (the design's definition of the impact) during the incident ÷ calm, median of ${PAIRS} pair(s) (${dispatchRatios.map((r) => round(r)).join(", ")}); p99 ms calm ${stats
          .filter((s) => s.kind === "calm")
          .map((s) => s.dispatch)
          .join(", ")}, incident ${stats
          .filter((s) => s.kind === "incident")
          .map((s) => s.dispatch)
          .join(", ")}`,
      },
    });
    console.log(`safe_tenant_p99_impact ${round(median(ratios))} (pairs: ${ratios.map((r) => round(r)).join(", ")})`);
    safe.ends.close();
    for (const c of hit) c.ends.close();
  } finally {
    await nc.close();
    await cp.stop();
  }
} finally {
  await Promise.all(servers.map((s) => s!.stop()));
}
