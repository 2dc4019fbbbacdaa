/**
 * The crash-recovery proof on Kubernetes hosts (proof/run-proof.ts) at P=15 on the local cluster's
 * real node (upstream kubelet, containerd, runc), run exactly as a user runs it, through the CLI:
 * `drover proof --host kubernetes --parallel 15 --transport http --exposure pod-ip --step-ms 100
 * --host-startups 12 --warm-pool 15 --json` (it starts its own cluster, NATS, Redis and FerretDB;
 * needs `make k8s-build` and root). Override with BENCH_K8S_PROOF_P, BENCH_K8S_PROOF_WARM (0: every
 * runtime cold-starts), BENCH_K8S_PROOF_STARTUPS.
 *  - k8s_proof_duration: the proof's own duration (control plane start, runs, log and read-model
 *    assertions), s; k8s_proof_wall: the command's wall time (the local cluster's start and stop too), s;
 *  - k8s_proof_fence_latency / k8s_proof_recovery_latency: kill → runtime.fenced / → in-flight
 *    execution resumed on its replacement, p50/p99;
 *  - k8s_scaleout_capacity_cold / _warm: scale-out request → capacity-published for runtimes
 *    cold-started as new Pods / claimed from the warm pool of runtime Pods, p50/p99, under the proof's load.
 * The proof's assertions must all pass, else no figure is recorded.
 */
import { execFile } from "node:child_process";
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { stageSection } from "../proof/recovery-stages.ts";
import type { ProofReport } from "../proof/run-proof.ts";
import { recordMetrics, round, type Metric } from "./support/results.ts";

const P = Number(process.env.BENCH_K8S_PROOF_P ?? 15);
const WARM = Number(process.env.BENCH_K8S_PROOF_WARM ?? 15);
const STARTUPS = Number(process.env.BENCH_K8S_PROOF_STARTUPS ?? 12);
const ROOT = resolve(import.meta.dirname, "..");

const args = [
  ...["--import", "tsx", "cli/drover.ts", "proof", "--host", "kubernetes", "--parallel", String(P)],
  ...["--transport", "http", "--exposure", "pod-ip", "--step-ms", "100", "--host-startups", String(STARTUPS)],
  ...(WARM > 0 ? ["--warm-pool", String(WARM)] : []),
  "--json",
];
const loadBefore = loadavg()[0]!;
const t0 = performance.now();
const stdout = await new Promise<string>((done, fail) => {
  execFile(process.execPath, args, { cwd: ROOT, maxBuffer: 64 << 20 }, (err, out, errOut) => {
    // Exit 1 is a proof FAIL with a report on stdout: judged below; anything else is an error.
    if (err && err.code !== 1) fail(new Error(`drover proof: ${String(err)}\n${errOut.slice(-2000)}`));
    else done(out);
  });
});
const wallMs = performance.now() - t0;
const report = JSON.parse(stdout.trim().split("\n").pop() ?? "{}") as ProofReport & { line: string };
console.log(report.line);
console.log(stageSection(report.stages, ` at P=${P}, warm pool ${WARM}`).join("\n"));
if (!report.pass) throw new Error("the proof failed: no Kubernetes proof figures recorded");

const load = `load ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after`;
const setting = `P=${P} (${report.runs} runs, ${report.kills.length} SIGKILLed runtime Pods), http, pod-ip, 100 ms steps, ${STARTUPS} host start-ups at once, warm pool ${WARM}; real node, 2 shared cores, ${load}`;
const q = (x: { p50: number; p99: number }, note: string): Metric => ({
  unit: "ms",
  value: x.p50,
  p50: x.p50,
  p99: x.p99,
  note: `${note}; ${setting}`,
});
const ph = report.phasesMs;
const metrics: Record<string, Metric> = {
  k8s_proof_duration: {
    unit: "s",
    value: round(report.durationMs / 1000, 1),
    note: `drover proof duration (runs ${round(ph.runs / 1000, 1)} s incl. control plane start, log assertions ${round(ph.log / 1000, 1)} s, read models ${round(ph.readModels / 1000, 1)} s), result=PASS; ${setting}`,
  },
  k8s_proof_wall: {
    unit: "s",
    value: round(wallMs / 1000, 1),
    note: `wall time of the command: local cluster start (image import) and stop, servers, proof; ${setting}`,
  },
  k8s_proof_fence_latency: q(report.latencies.fenced, "kill → runtime.fenced (exact Pod UID gone)"),
  k8s_proof_recovery_latency: q(report.latencies.resumed, "kill → in-flight execution resumed on its replacement"),
  k8s_scaleout_capacity_cold: q(
    report.startup.publishedCold,
    `scale-out request → capacity-published, new runtime Pod (cold), ${report.warmStarts.of - report.warmStarts.claimed} runtimes`,
  ),
  ...(report.warmStarts.claimed > 0
    ? {
        k8s_scaleout_capacity_warm: q(
          report.startup.publishedWarm,
          `scale-out request → capacity-published, claimed warm pool Pod (bind over its Pod IP), ${report.warmStarts.claimed} runtimes`,
        ),
      }
    : {}),
};
console.log(JSON.stringify(metrics, null, 2));
await recordMetrics(metrics);
