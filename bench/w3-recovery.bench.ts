/**
 * W3 (issue #15 item 5) with and without a warm runtime pool, end to end through the public API,
 * every service a process as `make run` starts them (read models on), process hosts, private
 * servers: 20 runs of 50 steps of 20 ms on one runtime, SIGKILLed once 25 × 20 steps completed;
 * `w3_kill_to_first_step_ms` / `w3_kill_to_all_done_ms` (times from the kill, JetStream's stored
 * timestamps) with `warmPool.process` = BENCH_W3_POOL (default 2), and `…_pool0` without a pool
 * (every replacement a cold start). The two configurations alternate (BENCH_W3_ROUNDS pairs,
 * default 1) so both see the same minutes of a shared machine; each figure is the median of its rounds.
 * Heartbeats as a deployment has them (`heartbeatIntervalMs` 1000, stale bound 3 s): a SIGKILL is
 * detected by the observed process exit, not by heartbeat silence.
 * With a pool, the kill's workload starts once every unclaimed member has warmed its step path
 * (`pool-warmed-up` in its log), as a running control plane's members have before an incident.
 * DROVER_KEEP_LOGS=1 keeps the services' logs and writes the stream as `events.jsonl` there (first
 * line `{"killedAt": ms}`, then each event with `t` in ms from the kill).
 */
import { loadavg } from "node:os";
import { chainDag } from "../platform/api-client.ts";
import { startFerret, startNats, startRedis } from "../platform/local-servers.ts";
import { median, recordMetrics, round } from "./support/results.ts";
import { runW3, type W3Result } from "./support/w3.ts";

const POOL = Number(process.env.BENCH_W3_POOL ?? 2);
const ROUNDS = Number(process.env.BENCH_W3_ROUNDS ?? 1);
/** BENCH_W3_COLD=0 runs the warm-pool rounds only (the pool-0 figures are then absent). */
const COLD = process.env.BENCH_W3_COLD !== "0";
const nats = await startNats();
const redis = await startRedis();
const ferret = await startFerret();
try {
  const runs: Record<"warm" | "cold", W3Result[]> = { warm: [], cold: [] };
  const load: number[] = [];
  for (let r = 0; r < ROUNDS; r++)
    for (const kind of r % 2 ? (["cold", "warm"] as const) : (["warm", "cold"] as const)) {
      if (kind === "cold" && !COLD) continue;
      load.push(loadavg()[0]!);
      const res = await runW3(
        { nats: nats.url, redis: redis.url, mongo: ferret.url },
        kind === "warm" ? POOL : 0,
        chainDag,
      );
      console.log(JSON.stringify({ kind, ...res }));
      runs[kind].push(res);
    }
  const m = (xs: W3Result[], f: (x: W3Result) => number) => round(median(xs.map(f)), 0);
  const where = `${ROUNDS} round(s) alternating with the other pool size, load average ${load.map((l) => round(l, 1)).join("/")} at their starts`;
  const metric = (kind: "warm" | "cold", f: (x: W3Result) => number, what: string) => ({
    unit: "ms",
    value: m(runs[kind], f),
    note: `${what}; 20 runs × 50 × 20 ms, SIGKILL at 500 steps, ${kind === "warm" ? `warm pool ${POOL}` : "warm pool 0 (cold replacement)"}, heartbeat 1 s; median of ${where}`,
  });
  const metrics = {
    w3_kill_to_first_step_ms: metric(
      "warm",
      (x) => x.firstStepMs,
      "SIGKILL of the runtime → first step completed after it",
    ),
    w3_kill_to_all_done_ms: metric("warm", (x) => x.allDoneMs, "SIGKILL → last of the 20 runs completed"),
    w3_resume_spread_ms: metric(
      "warm",
      (x) => x.spread.firstStepLast! - x.spread.firstStepFirst!,
      "first → last of the 20 runs' first step after the fence (how together they resumed)",
    ),
    ...(COLD && {
      w3_kill_to_first_step_ms_pool0: metric(
        "cold",
        (x) => x.firstStepMs,
        "SIGKILL of the runtime → first step completed after it",
      ),
      w3_kill_to_all_done_ms_pool0: metric("cold", (x) => x.allDoneMs, "SIGKILL → last of the 20 runs completed"),
    }),
    w3_duplicate_steps: {
      unit: "steps",
      value: Math.max(...[...runs.warm, ...runs.cold].map((x) => x.duplicates)),
      note: "step-completed events beyond one per (run, step), the most of any W3 round: journaled steps are never redone",
    },
  };
  console.log(JSON.stringify(metrics, null, 2));
  await recordMetrics(metrics);
} finally {
  for (const s of [nats, redis, ferret]) await s.stop();
}
