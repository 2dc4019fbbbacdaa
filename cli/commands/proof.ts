import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { proofLine, runProof, type ProofProgress, type ProofReport } from "../../proof/run-proof.ts";
import { CONTROL_FLOW_PROOF, DEFAULT_PROOF, type ProofOptions } from "../../proof/scenario-config.ts";
import { startProofCluster } from "../../proof/kubernetes-hosts.ts";
import { stageSection } from "../../proof/recovery-stages.ts";
import { startFerret, startNats, startRedis, type RunningServer } from "../../platform/local-servers.ts";
import { stopAllControlPlanes } from "../../platform/control-plane-processes.ts";
import { startNatsCluster } from "../../platform/nats-cluster.ts";

export const PROOF_USAGE = `drover proof [--parallel P] [--transport http|grpc] [--host process|kubernetes] [--exposure pod-ip|gateway|node-port|port-forward] [--steps N] [--step-ms M]
             [--workload builtin|custom|control-flow] [--seed S] [--kill-after K] [--signal SIGKILL|SIGSTOP] [--host-startups H] [--warm-pool N]
             [--replicas R] [--chaos-every-ms M] [--nats-cluster 3 [--kill-nats-leader]] [--timeout-s T] [--json]
  Runs the crash-recovery proof against the real services: P scenarios of 2 impacted + 1 safe tenant,
  3 runs of an N-step DAG each; each impacted runtime is SIGKILLed once its in-flight execution has K
  durable steps (SIGKILL, or SIGSTOP for a zombie the fence must kill); the forensics read models are
  dropped mid-proof and must equal a fresh rebuild. --workload custom runs the chain as tenant code (proof/custom-worker.ts:
  custom steps passing outputs by $ref, some stored in the object store) and checks every run's output against an uninterrupted run's.
  --workload control-flow runs a map of N items (default 6, 3 at once; tenant code) whose fan-in gets their outputs, and a wait
  the proof resolves with POST /v1/runs/:id/signals/approval and an allowed token; the kill comes once K items (default 2) completed. Uses NATS_URL, REDIS_URL and MONGO_URL when set, else starts private servers on free ports.
  --host kubernetes starts a private local cluster (make k8s-build first) and hosts runtimes as Pods, reached by Pod IP, through its shared
  Gateway, or at <node InternalIP>:<nodePort> of a per-runtime NodePort Service (the local cluster's node-port proxy).
  --host-startups H lets the provisioner start H runtime hosts at once (default 4; replacements queue behind it).
  --warm-pool N keeps N runtime hosts started ahead of need (default 0): scale-outs, recovery replacements included,
  claim a warm one instead of a cold start (Kubernetes hosts: pod-ip exposure only); the first run is submitted once
  N members are ready (that wait counts in the duration).
  --replicas R runs R processes of every control-plane service (default 1); --chaos-every-ms M then SIGKILLs a random
  replica of the next service in turn every M ms once every run is submitted, and restarts it 0.5 s later.
  --nats-cluster 3 starts a private 3-node JetStream cluster (every stream R3; not with NATS_URL); --kill-nats-leader SIGKILLs
  the node leading the event stream at the last runtime kill and restarts it on its own store once a new leader is elected (+5 s).
  Prints one line per assertion, the latencies, each kill's recovery stages (ms after the kill) and the proof line last.
  Exit 0 on PASS, 1 on FAIL, 2 on bad usage.`;

/** Parses the flags; throws a usage error message on anything it does not understand. */
export function parseProofArgs(argv: readonly string[]): { options: ProofOptions; json: boolean; timeoutMs: number } {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    options: {
      parallel: { type: "string" },
      transport: { type: "string" },
      host: { type: "string" },
      steps: { type: "string" },
      "step-ms": { type: "string" },
      seed: { type: "string" },
      "kill-after": { type: "string" },
      "timeout-s": { type: "string" },
      json: { type: "boolean" },
      signal: { type: "string" },
      exposure: { type: "string" },
      workload: { type: "string" },
      "host-startups": { type: "string" },
      "warm-pool": { type: "string" },
      replicas: { type: "string" },
      "chaos-every-ms": { type: "string" },
      "nats-cluster": { type: "string" },
      "kill-nats-leader": { type: "boolean" },
    },
  });
  const int = (v: string | undefined, def: number, name: string, min: number) => {
    if (v === undefined) return def;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min}`);
    return n;
  };
  const transport = values.transport ?? DEFAULT_PROOF.transport;
  if (transport !== "http" && transport !== "grpc") throw new Error("--transport must be http or grpc");
  const host = values.host ?? DEFAULT_PROOF.host;
  if (host !== "process" && host !== "kubernetes") throw new Error("--host must be process or kubernetes");
  const exposure = values.exposure ?? "pod-ip";
  if (exposure !== "pod-ip" && exposure !== "gateway" && exposure !== "node-port" && exposure !== "port-forward")
    throw new Error("--exposure must be pod-ip, gateway, node-port or port-forward");
  if (values.exposure !== undefined && host !== "kubernetes")
    throw new Error("--exposure applies to --host kubernetes only");
  const workload = values.workload ?? DEFAULT_PROOF.workload;
  if (workload !== "builtin" && workload !== "custom" && workload !== "control-flow")
    throw new Error("--workload must be builtin, custom or control-flow");
  // control-flow: --steps is the map's item count, --kill-after the items completed at the kill.
  const cf = workload === "control-flow";
  const steps = int(values.steps, cf ? CONTROL_FLOW_PROOF.steps : DEFAULT_PROOF.steps, "steps", 2);
  const killAfter = cf ? CONTROL_FLOW_PROOF.killAfterSteps : DEFAULT_PROOF.killAfterSteps;
  const killAfterSteps = int(values["kill-after"], Math.min(killAfter, steps - 1), "kill-after", 1);
  if (killAfterSteps >= steps)
    throw new Error("--kill-after must be smaller than --steps (the kill must land mid-execution)");
  const warmPool = int(values["warm-pool"], 0, "warm-pool", 0);
  if (warmPool > 64) throw new Error("--warm-pool must be at most 64");
  if (warmPool > 0 && host === "kubernetes" && exposure !== "pod-ip")
    throw new Error("--warm-pool on Kubernetes hosts needs --exposure pod-ip (a member is bound at its Pod IP)");
  const replicas = int(values.replicas, 1, "replicas", 1);
  if (replicas > 4) throw new Error("--replicas must be at most 4");
  const chaosEveryMs = int(values["chaos-every-ms"], 0, "chaos-every-ms", 0);
  if (chaosEveryMs > 0 && replicas < 2)
    throw new Error("--chaos-every-ms needs --replicas 2 or more (a service must keep a running replica)");
  const natsCluster = int(values["nats-cluster"], 1, "nats-cluster", 1);
  if (natsCluster !== 1 && (natsCluster < 3 || natsCluster % 2 === 0))
    throw new Error("--nats-cluster must be 1 or an odd number ≥ 3 (a quorum)");
  if (values["kill-nats-leader"] && natsCluster < 3) throw new Error("--kill-nats-leader needs --nats-cluster 3");
  const signal = (values.signal ?? "SIGKILL").toUpperCase().replace(/^(?!SIG)/, "SIG");
  if (signal !== "SIGKILL" && signal !== "SIGSTOP")
    throw new Error("--signal must be SIGKILL (crash) or SIGSTOP (zombie)");
  return {
    options: {
      parallel: int(values.parallel, DEFAULT_PROOF.parallel, "parallel", 1),
      transport,
      host,
      steps,
      killAfterSteps,
      signal,
      workload,
      ...(host === "kubernetes" ? { exposure } : {}),
      stepMs: int(values["step-ms"], DEFAULT_PROOF.stepMs, "step-ms", 0),
      seed: int(values.seed, DEFAULT_PROOF.seed, "seed", 0),
      ...(values["host-startups"] === undefined
        ? {}
        : { hostStartups: Math.min(64, int(values["host-startups"], 4, "host-startups", 1)) }),
      ...(warmPool > 0 ? { warmPool } : {}),
      ...(replicas > 1 ? { replicas } : {}),
      ...(chaosEveryMs > 0 ? { chaosEveryMs } : {}),
      ...(natsCluster > 1 ? { natsCluster } : {}),
      ...(values["kill-nats-leader"] ? { killNatsLeader: true } : {}),
    },
    json: values.json ?? false,
    timeoutMs: int(values["timeout-s"], 900, "timeout-s", 10) * 1000,
  };
}

function progressLine(p: ProofProgress): string {
  return `[${(p.elapsedMs / 1000).toFixed(1).padStart(6)}s] ${p.phase.padEnd(9)} runs ${p.completed}/${p.submitted} completed, ${p.killed} runtimes killed`;
}

export function summary(r: ProofReport): string {
  return [
    ...r.assertions.map((a) => `  ${a.ok ? "ok  " : "FAIL"} ${a.name}: ${a.detail}`),
    `  kill → suspected p50 ${r.latencies.suspected.p50} ms p99 ${r.latencies.suspected.p99} ms; → fenced p50 ${r.latencies.fenced.p50} p99 ${r.latencies.fenced.p99}; → resumed p50 ${r.latencies.resumed.p50} p99 ${r.latencies.resumed.p99}`,
    `  kill gate: step durable → seen p50 ${r.latencies.gateSeen.p50} ms p99 ${r.latencies.gateSeen.p99}; → signal sent p50 ${r.latencies.gateSignal.p50} p99 ${r.latencies.gateSignal.p99}`,
    `  request → host ready p50 ${r.startup.hostReady.p50} ms p99 ${r.startup.hostReady.p99}; ${Number.isNaN(r.startup.route.p50) ? "" : `→ route programmed p50 ${r.startup.route.p50} p99 ${r.startup.route.p99}; `}→ capacity published p50 ${r.startup.published.p50} p99 ${r.startup.published.p99}`,
    r.warmStarts.claimed === 0
      ? `  → capacity published: all ${r.warmStarts.of} runtimes cold (no warm pool member claimed)`
      : `  → capacity published: cold p50 ${r.startup.publishedCold.p50} ms p99 ${r.startup.publishedCold.p99}; warm p50 ${r.startup.publishedWarm.p50} ms p99 ${r.startup.publishedWarm.p99} (${r.warmStarts.claimed} of ${r.warmStarts.of} runtimes claimed a warm pool member)`,
    `  kills: ${r.kills
      .slice(0, 4)
      .map((k) => `${k.runtimeInstanceId}@${k.completedAtKill} steps`)
      .join(", ")}${r.kills.length > 4 ? `, … (${r.kills.length} in all)` : ""}`,
    ...(r.chaos.length
      ? [
          `  chaos: ${r.chaos.length} service replicas SIGKILLed and restarted (${[...new Set(r.chaos.map((k) => k.service))].join(", ")}); restart p50 ${[...r.chaos].map((k) => k.restartMs).sort((a, b) => a - b)[Math.floor(r.chaos.length / 2)]} ms`,
        ]
      : []),
    `  duration ${(r.durationMs / 1000).toFixed(1)} s (runs ${(r.phasesMs.runs / 1000).toFixed(1)} s${r.warmPoolReadyMs ? ` incl. ${(r.warmPoolReadyMs / 1000).toFixed(1)} s until ${r.options.warmPool} warm pool members were ready` : ""}, log assertions ${(r.phasesMs.log / 1000).toFixed(1)} s, read models ${(r.phasesMs.readModels / 1000).toFixed(1)} s)${r.logDir ? `; service logs kept in ${r.logDir}` : ""}`,
    // Where each kill's recovery time went (the table bench/recovery.bench.ts prints); the proof line stays last.
    ...stageSection(r.stages, " of each kill's recovery", "  "),
    proofLine(r),
  ].join("\n");
}

/** `drover proof`: returns the exit code. */
export async function proofCommand(argv: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseProofArgs(argv);
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n${PROOF_USAGE}\n`);
    return 2;
  }
  const started: RunningServer[] = [];
  let cluster: Awaited<ReturnType<typeof startProofCluster>> | undefined;
  // Ctrl-C or a SIGTERM: stop the control plane (its provisioner takes the runtimes down), the
  // cluster and the servers this command started, then exit 130, instead of leaving them behind.
  let onSignal: (signal: NodeJS.Signals) => void = () => undefined;
  let stopped = false;
  const interrupted = new Promise<never>((_, reject) => {
    onSignal = (signal) => reject(new Interrupted(signal));
  });
  interrupted.catch(() => undefined);
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    if (parsed.options.host === "kubernetes") {
      cluster = await startProofCluster(parsed.options.exposure ?? "pod-ip");
    }
    // DROVER_KEEP_LOGS keeps the JetStream store too (restart nats-server on it to read the whole log).
    const storeDir = process.env.DROVER_KEEP_LOGS ? await mkdtemp(join(tmpdir(), "drover-proof-nats-")) : undefined;
    if (storeDir) process.stderr.write(`JetStream store kept in ${storeDir}\n`);
    const size = parsed.options.natsCluster ?? 1;
    if (size > 1 && (process.env.NATS_URL || cluster))
      throw new Error("--nats-cluster starts its own loopback cluster: not with NATS_URL or --host kubernetes");
    // Every stream of the cluster is R3 (NATS_REPLICAS reaches the setup and every service it spawns).
    if (size > 1) process.env.NATS_REPLICAS = String(size);
    const natsCluster = size > 1 ? await startNatsCluster({ size }) : undefined;
    if (natsCluster) started.push(natsCluster);
    const natsUrl =
      natsCluster?.url ??
      process.env.NATS_URL ??
      (started[started.length] = await startNats({ host: cluster?.natsHost, ...(storeDir ? { storeDir } : {}) })).url;
    const redisUrl = process.env.REDIS_URL ?? (started[started.length] = await startRedis()).url;
    const mongoUrl = process.env.MONGO_URL ?? (started[started.length] = await startFerret()).url;
    const tty = process.stderr.isTTY;
    const report = await Promise.race([
      runProof(
        parsed.options,
        {
          natsUrl,
          redisUrl,
          mongoUrl,
          ...(cluster ? { kubernetes: cluster.kubernetes } : {}),
          ...(natsCluster ? { natsCluster } : {}),
        },
        (p) => {
          if (parsed.json) return;
          process.stderr.write(tty ? `\r${progressLine(p)}` : `${progressLine(p)}\n`);
        },
        parsed.timeoutMs,
      ),
      interrupted,
    ]);
    if (tty && !parsed.json) process.stderr.write("\n");
    process.stdout.write(
      parsed.json ? `${JSON.stringify({ ...report, line: proofLine(report) })}\n` : `${summary(report)}\n`,
    );
    return report.pass ? 0 : 1;
  } catch (e) {
    if (!(e instanceof Interrupted)) throw e;
    process.stderr.write(`\n${e.message}: stopping the control plane, the cluster and the servers\n`);
    await stopAllControlPlanes();
    stopped = true;
    return 130;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await cluster?.stop();
    for (const s of started) await s.stop();
    // The proof's own connections and timers are still pending: end the process here.
    if (stopped) process.exit(130);
  }
}

class Interrupted extends Error {
  constructor(signal: NodeJS.Signals) {
    super(`interrupted by ${signal}`);
  }
}
