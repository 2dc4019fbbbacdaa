/**
 * Recovery latencies from the crash-recovery proof (proof/run-proof.ts) on the real services and
 * process hosts, private nats-server and Redis (run with tsx: `make bench`): P scenarios, each
 * impacted runtime SIGKILLed once its in-flight execution has 25 durable steps.
 *  - detect_latency: kill → runtime.suspected; fence_latency: kill → runtime.fenced;
 *  - recovery_latency: kill → the in-flight execution resumed on a replacement runtime. Cold: the
 *    proof runs here without a warm pool (warmPool 0), so every replacement is a new process.
 * The proof's assertions must all pass, else no figure is recorded.
 */
import { proofLine, runProof } from "../proof/run-proof.ts";
import { DEFAULT_PROOF } from "../proof/scenario-config.ts";
import { startNats, startRedis } from "../platform/local-servers.ts";
import { recordMetrics, type Metric } from "./support/results.ts";

const P = Number(process.env.BENCH_PROOF_P ?? 5);
const [nats, redis] = await Promise.all([startNats(), startRedis()]);
try {
  const report = await runProof(
    { ...DEFAULT_PROOF, parallel: P, stepMs: 10 },
    { natsUrl: nats.url, redisUrl: redis.url },
    () => undefined,
  );
  console.log(proofLine(report));
  if (!report.pass) throw new Error("the proof failed: no recovery figures recorded");
  const m = (q: { p50: number; p99: number }, note: string): Metric => ({
    unit: "ms",
    value: q.p50,
    p50: q.p50,
    p99: q.p99,
    note: `${note}; P=${P}, ${report.kills.length} SIGKILLed runtimes, process hosts`,
  });
  const metrics = {
    detect_latency: m(report.latencies.suspected, "kill → runtime.suspected"),
    fence_latency: m(report.latencies.fenced, "kill → runtime.fenced (process exit observed)"),
    recovery_latency: m(
      report.latencies.resumed,
      "kill → in-flight execution resumed on a cold replacement runtime (warm pool 0)",
    ),
  };
  console.log(JSON.stringify(metrics, null, 2));
  await recordMetrics(metrics);
} finally {
  await Promise.all([nats.stop(), redis.stop()]);
}
