/**
 * Recovery latencies from the crash-recovery proof (proof/run-proof.ts) on the real services and
 * process hosts, private nats-server and Redis (run with tsx: `make bench`): for each P of
 * BENCH_PROOF_P (default "5,20"), the proof with a warm pool of 2 × P runtimes (one per runtime the
 * proof kills) and with pool size 0, alternating; each impacted runtime SIGKILLed once its
 * in-flight execution has 25 durable steps (`BENCH_PROOF_POOLS`, e.g. "25": those pool sizes instead).
 * Each run also prints its per-kill stage table (proof/recovery-stages.ts: suspected, fenced, paused,
 * scale-out requested, claimed/registered, layers, capacity, replacement selected, resumed; p50/p99).
 *  - `recovery_latency_ms_p<P>_warm` / `_pool0`: kill → the in-flight execution resumed on its replacement;
 *  - `detect_latency` (kill → runtime.suspected) and `fence_latency` (kill → runtime.fenced), from the first P's warm run.
 * The proof's assertions must all pass, else no figure of that run is recorded.
 */
import { loadavg } from "node:os";
import { proofLine, runProof } from "../proof/run-proof.ts";
import { stageSection } from "../proof/recovery-stages.ts";
import { DEFAULT_PROOF } from "../proof/scenario-config.ts";
import { startNats, startRedis } from "../platform/local-servers.ts";
import { recordMetrics, round, type Metric } from "./support/results.ts";

const PS = (process.env.BENCH_PROOF_P ?? "5,20").split(",").map(Number);
const [nats, redis] = await Promise.all([startNats(), startRedis()]);
try {
  const metrics: Record<string, Metric> = {};
  for (const P of PS)
    for (const pool of process.env.BENCH_PROOF_POOLS?.split(",").map(Number) ?? [2 * P, 0]) {
      const load = round(loadavg()[0]!, 1);
      const report = await runProof(
        { ...DEFAULT_PROOF, parallel: P, stepMs: 10, ...(pool ? { warmPool: pool } : {}) },
        { natsUrl: nats.url, redisUrl: redis.url },
        () => undefined,
      );
      console.log(proofLine(report));
      console.log(stageSection(report.stages, ` at P=${P}, warm pool ${pool}`).join("\n"));
      if (!report.pass) {
        console.error(`the proof at P=${P}, warm pool ${pool} failed: no figure recorded`);
        continue;
      }
      const where = `P=${P}, ${report.kills.length} SIGKILLed runtimes, process hosts, ${pool ? `warm pool ${pool} (${report.warmStarts.claimed} of ${report.warmStarts.of} runtimes claimed a member)` : "warm pool 0 (every replacement a cold start)"}, proof ${round(report.durationMs / 1000, 1)} s, load average ${load} at its start`;
      const m = (q: { p50: number; p99: number }, note: string): Metric => ({
        unit: "ms",
        value: q.p50,
        p50: q.p50,
        p99: q.p99,
        note: `${note}; ${where}`,
      });
      metrics[`recovery_latency_ms_p${P}_${pool ? "warm" : "pool0"}`] = m(
        report.latencies.resumed,
        "kill → in-flight execution resumed on its replacement runtime",
      );
      if (P === PS[0] && pool) {
        metrics.detect_latency = m(report.latencies.suspected, "kill → runtime.suspected");
        metrics.fence_latency = m(report.latencies.fenced, "kill → runtime.fenced (process exit observed)");
      }
    }
  console.log(JSON.stringify(metrics, null, 2));
  await recordMetrics(metrics);
} finally {
  await Promise.all([nats.stop(), redis.stop()]);
}
