import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { z } from "zod";
import type { DagInput, KubernetesHostConfig } from "../contracts/index.ts";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsCluster } from "../platform/nats-cluster.ts";
import { connectHarness } from "../platform/nats-auth/server-keys.ts";
import { Redis } from "ioredis";
import { validateIncidentLog, validateRunLog } from "../aggregates/replay-validation.ts";
import { follow } from "../platform/follow.ts";
import { createEventStore, type StoredEvent } from "../streams/index.ts";
import { apiClient } from "../platform/api-client.ts";
import { SERVICES, startControlPlane } from "../platform/control-plane-processes.ts";
import { readModelDbName } from "../platform/read-model-db.ts";
import { dropReadModels, readModelAssertions } from "./read-model-checks.ts";
import { assertProof, type AssertionResult, type KillRecord } from "./assertions.ts";
import { recordsExpected } from "./send-failed.ts";
import { startKillGate } from "./kill-gate.ts";
import { proofConfig, scenarioTenants, tokenOf, type ProofOptions } from "./scenario-config.ts";
import { startupLatencies, type StartupLatencies } from "./startup-latencies.ts";
import { outputAssertion, readStoredOutputs, tamperAssertion } from "./custom-outputs.ts";
import { proofDag } from "./workload.ts";
import { controlFlowDag, controlFlowInput, CF_MAP } from "./control-flow-workload.ts";
import { controlFlowAssertions, signalsAssertion } from "./control-flow-assertions.ts";
import { startWaitSignaller } from "./wait-signaller.ts";
import { waitForWarmPool } from "./warm-pool-ready.ts";
import { startChaos, type Chaos, type ChaosKill } from "./chaos.ts";
import { decisionsOnce } from "./decision-assertions.ts";
import { recoveryLatencies, type RecoveryLatencies } from "./recovery-latencies.ts";
import { recoveryStageTraces, type StageTrace } from "./recovery-stages.ts";
import { leaderKillAssertion, natsLeaderKiller } from "./nats-leader-kill.ts";

/**
 * The step after the kill point sleeps this long in the runs the gate kills, so a kill the proof
 * sends late still lands mid-execution (the gate has lagged up to 3.3 s behind the journal on a
 * machine at load 15–28).
 */
const KILL_HOLD_MS = 5_000;

export interface ProofProgress {
  readonly submitted: number;
  readonly completed: number;
  readonly killed: number;
  readonly elapsedMs: number;
  readonly phase: string;
}
export interface ProofReport {
  readonly options: ProofOptions;
  readonly runs: number;
  readonly recovered: number;
  /**
   * Runs expected in a killed runtime's local queue whose send to it failed instead (proof/send-failed.ts):
   * placed again as ordinary work, so `recovered` is the killed tenants' runs minus these.
   */
  readonly sendsFailed: number;
  /**
   * Runs of a killed tenant admission had not yet placed when its runtime died (proof/send-failed.ts
   * `never-placed`): placed on the replacement as ordinary work, no recovery item.
   */
  readonly notPlaced: number;
  readonly kills: readonly KillRecord[];
  readonly assertions: readonly AssertionResult[];
  /**
   * kill → suspected / fenced / in-flight execution resumed on the replacement, ms (p50, p99); and the
   * kill gate's own lag: the triggering step durable → seen by the gate (`gateSeen`) → signal sent (`gateSignal`).
   */
  readonly latencies: RecoveryLatencies;
  /** Each kill's recovery stages, ms after the kill (proof/recovery-stages.ts). */
  readonly stages: readonly StageTrace[];
  /** scale-out request → host layer (process alive / Pod Ready) → route layer (gateway only) → capacity published, ms (p50, p99). */
  readonly startup: StartupLatencies;
  /** Runtimes started by claiming a warm pool member (`runtime.pool-member-claimed`), of all registered from a scale-out. */
  readonly warmStarts: { readonly claimed: number; readonly of: number };
  /** With `chaosEveryMs`: the service replicas SIGKILLed and restarted while the runs ran. */
  readonly chaos: readonly ChaosKill[];
  /** With `warmPool`: control plane start → that many members ready, before the first submission (part of `phasesMs.runs`). */
  readonly warmPoolReadyMs: number;
  readonly durationMs: number;
  /** Where the time went, ms: start-up and runs to completion, the log assertions, the read-model assertions. */
  readonly phasesMs: Readonly<Record<"runs" | "log" | "readModels", number>>;
  readonly pass: boolean;
  /** Service logs, kept only when the proof failed ("" otherwise). */
  readonly logDir: string;
}

/**
 * The crash-recovery proof (proof-and-bench.md): P scenarios of 2 impacted + 1 safe tenant, 3 runs
 * each, against the real services on real infrastructure; each impacted runtime is SIGKILLed once
 * its in-flight execution has `killAfterSteps` durable steps; recovery is automatic. Then every
 * assertion is evaluated over the whole event log.
 */
export async function runProof(
  o: ProofOptions,
  infra: {
    natsUrl: string;
    redisUrl: string;
    mongoUrl?: string;
    kubernetes?: z.input<typeof KubernetesHostConfig>;
    /** The private NATS cluster (`--nats-cluster`): `--kill-nats-leader` kills and restarts its nodes. */
    natsCluster?: NatsCluster;
  },
  onProgress: (p: ProofProgress) => void,
  timeoutMs = 600_000,
): Promise<ProofReport> {
  const t0 = Date.now();
  const redis = new Redis(infra.redisUrl);
  await redis.flushdb();
  redis.disconnect();
  // With MongoDB the forensics projector runs too, its database is dropped mid-proof, and the
  // read-model assertions run through the API.
  const services = infra.mongoUrl ? ([...SERVICES, "forensics"] as const) : SERVICES;
  const cp = await startControlPlane({
    natsUrl: infra.natsUrl,
    redisUrl: infra.redisUrl,
    config: proofConfig(o, infra.kubernetes),
    ...(infra.mongoUrl ? { mongoUrl: infra.mongoUrl, services } : {}),
    ...(o.replicas ? { replicas: Object.fromEntries(services.map((s) => [s, o.replicas])) } : {}),
  });
  // On a cluster the proof's own connection rides the node kill like the services' (reconnect forever).
  const nc = await connectHarness({ servers: infra.natsUrl, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  let pass = false;
  try {
    const js = jetstream(nc);
    const store = createEventStore(nc, cp.layout);
    const tenants = Array.from({ length: o.parallel }, (_, i) => scenarioTenants(i));
    const impacted = new Set(tenants.flatMap((t) => t.impacted));
    const kills: KillRecord[] = [];
    const leaderKill =
      o.killNatsLeader && infra.natsCluster
        ? natsLeaderKiller(infra.natsCluster, await jetstreamManager(nc), cp.layout.eventStream)
        : undefined;
    let dropped: Promise<number> | undefined;
    const cf = o.workload === "control-flow";
    // control-flow: `steps` is the map's item count and the gate counts completed items only.
    const counted = cf ? (stepId: string) => stepId.startsWith(`${CF_MAP}--`) : () => true;
    const gate = await startKillGate(js, store, cp.layout, impacted, o.killAfterSteps, o.signal, counted, (k) => {
      kills.push(k);
      // --kill-nats-leader: the event stream's leader dies with the last impacted runtime, while recovery
      // works. Not with the first: the gate's own consumer stalls through the election and, seen in CI,
      // saw the next tenant's 25th step 19 s late, after that execution had completed (no kill was due).
      if (kills.length === impacted.size) leaderKill?.trigger();
      // Mid-proof, once half the runtimes are down: lose every read model.
      if (infra.mongoUrl && !dropped && kills.length >= impacted.size / 2)
        dropped = dropReadModels(infra.mongoUrl, readModelDbName(cp.env, "cp-proof"));
    });
    const signaller = cf ? await startWaitSignaller(js, cp.layout, cp.apiUrl) : undefined;
    let signalFailures: string[] = [];
    let chaos: Chaos | undefined;
    let chaosKills: readonly ChaosKill[] = [];
    let completed = 0;
    const done = await follow(
      js,
      { stream: cp.layout.eventStream, filters: [`${cp.layout.eventPrefix}.run.*.*.completed`] },
      () => {
        completed++;
      },
    );
    // With a warm pool: the pool is warm before the first run (included in the duration and the runs phase).
    const warmPoolReadyMs = o.warmPool ? await waitForWarmPool(js, cp.layout, o.warmPool, 300_000) : 0;
    const runs: {
      tenantId: string;
      sharedRunId: string;
      dag: DagInput;
      input?: ReturnType<typeof controlFlowInput>;
    }[] = [];
    const dag = cf ? controlFlowDag(o.stepMs) : proofDag(o.steps, o.stepMs, o.seed, o.workload);
    // The first run of an impacted tenant is the execution the gate kills: it holds after the kill point.
    const held = cf
      ? dag
      : proofDag(o.steps, o.stepMs, o.seed, o.workload, [{ index: o.killAfterSteps, ms: KILL_HOLD_MS }]);
    const inputOf = (isHeld: boolean) =>
      cf
        ? controlFlowInput(o.steps, o.stepMs, isHeld ? { from: o.killAfterSteps, ms: KILL_HOLD_MS } : undefined)
        : undefined;
    const progress = (phase: string) =>
      onProgress({ submitted: runs.length, completed, killed: kills.length, elapsedMs: Date.now() - t0, phase });
    const ticker = setInterval(() => progress("running"), 1000);
    try {
      await Promise.all(
        tenants
          .flatMap((t) => [...t.impacted, t.safe])
          .map(async (tenantId) => {
            const api = apiClient(cp.apiUrl, tokenOf(tenantId));
            for (let r = 0; r < 3; r++) {
              const isHeld = r === 0 && impacted.has(tenantId);
              const runDag = isHeld ? held : dag;
              // control-flow: every impacted run holds its in-flight items; the one that runs first is killed
              // (seen over gRPC: a tenant's second run executed before its first, and finished before the kill).
              const input = inputOf(cf ? impacted.has(tenantId) : isHeld);
              const idempotencyKey = `proof-${o.seed}-${tenantId}-${r}`;
              const res = input
                ? await api.post("/v1/runs", { dag: runDag, input, idempotencyKey })
                : await api.submit(runDag, idempotencyKey);
              if (res.status !== 201 && res.status !== 200)
                throw new Error(`submission for ${tenantId} refused: ${res.status} ${JSON.stringify(res.body)}`);
              runs.push({ tenantId, sharedRunId: res.body.sharedRunId, dag: runDag, ...(input ? { input } : {}) });
            }
          }),
      );
      progress("submitted");
      if (o.chaosEveryMs) chaos = startChaos(cp, services, { everyMs: o.chaosEveryMs, downMs: 500, seed: o.seed });
      const deadline = Date.now() + timeoutMs;
      while (completed < runs.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    } finally {
      clearInterval(ticker);
      chaosKills = (await chaos?.stop()) ?? [];
      await gate.stop();
      await done.stop();
      signalFailures = (await signaller?.stop()) ?? [];
    }
    const leaderKilled = await leaderKill?.finish();
    const tRuns = Date.now();
    progress("verifying");
    // Let the forensics timelines catch up with the last completions before reading the log.
    await waitForTimelines(store, cp.layout.eventPrefix, kills.length, 30_000);
    const log: StoredEvent[] = [];
    await store.replay({ seq: 1 }, (e) => {
      log.push(e);
    });
    // Replay validation checks every object-store output against its recorded digest.
    const stored = await readStoredOutputs(nc, cp.layout, log);
    const assertions = [
      ...assertProof(
        log,
        { impactedTenants: [...impacted], safeTenants: tenants.map((t) => t.safe), runs, kills },
        cp.layout.eventPrefix.split(".").length,
      ),
      replayAssertion(log, runs, kills, stored),
      ...decisionsOnce(log),
      ...(o.workload === "custom" ? [outputAssertion(log, runs, stored.size), tamperAssertion(log, stored, held)] : []),
      ...(cf
        ? [
            ...controlFlowAssertions(
              log,
              { runs: runs.map((r) => ({ ...r, items: r.input?.items ?? [] })), kills },
              cp.layout.eventPrefix.split(".").length,
            ),
            signalsAssertion(signalFailures, signaller?.sent() ?? 0, runs.length),
          ]
        : []),
      ...(leaderKill ? [leaderKillAssertion(leaderKilled!)] : []),
    ];
    const tLog = Date.now();
    const { records: expectedRecords, notQueued } = recordsExpected(log, kills, runs);
    if (infra.mongoUrl) {
      let rebuildError = "the read models were never dropped";
      const rebuiltMs = dropped
        ? await dropped.catch((e: unknown) => {
            rebuildError = String(e);
            return -1;
          })
        : -1;
      assertions.push({
        name: "rebuild: the projector rebuilt the read models dropped mid-proof",
        ok: rebuiltMs >= 0,
        violations: rebuiltMs >= 0 ? 0 : 1,
        detail:
          rebuiltMs >= 0
            ? `dropped after ${Math.ceil(impacted.size / 2)} kills, rebuilt in ${(rebuiltMs / 1000).toFixed(1)} s`
            : rebuildError,
      });
      const asTenant = (tenantId: string) => ({
        tenantId,
        token: tokenOf(tenantId),
        runs: runs.filter((r) => r.tenantId === tenantId).map((r) => r.sharedRunId),
      });
      assertions.push(
        ...(await readModelAssertions({
          apiUrl: cp.apiUrl,
          nc,
          layout: cp.layout,
          controlPlaneId: "cp-proof",
          endSeq: log.at(-1)?.seq ?? 0,
          impacted: [...impacted].map((t) => ({ ...asTenant(t), records: expectedRecords.get(t) ?? 3 })),
          safe: tenants.map((t) => asTenant(t.safe)),
          timeoutMs: 120_000,
        })),
      );
    }
    const recovered = log.filter((e) => e.event.type === "forensics.execution-recovery-completed").length;
    pass = assertions.every((a) => a.ok);
    // A kept log directory holds the event log too (one JSON line per event): what a failure is diagnosed from.
    if (!pass || process.env.DROVER_KEEP_LOGS === "1") {
      await writeFile(
        join(cp.logDir, "events.jsonl"),
        log.map((e) => JSON.stringify({ seq: e.seq, time: e.time.toISOString(), s: e.subject, e: e.event })).join("\n"),
      );
      await writeFile(join(cp.logDir, "kills.json"), JSON.stringify(kills, null, 1));
    }
    const phasesMs = { runs: tRuns - t0, log: tLog - tRuns, readModels: Date.now() - tLog };
    return {
      options: o,
      runs: runs.length,
      recovered,
      sendsFailed: notQueued.sendFailed,
      notPlaced: notQueued.neverPlaced,
      kills,
      assertions,
      latencies: recoveryLatencies(log, kills),
      stages: recoveryStageTraces(log, kills),
      startup: startupLatencies(log),
      warmPoolReadyMs,
      warmStarts: {
        claimed: log.filter((e) => e.event.type === "runtime.pool-member-claimed").length,
        of: log.filter((e) => e.event.type === "runtime.registered" && e.event.data.scaleOutRequestId).length,
      },
      chaos: chaosKills,
      durationMs: Date.now() - t0,
      phasesMs,
      pass,
      logDir: pass && process.env.DROVER_KEEP_LOGS !== "1" ? "" : cp.logDir,
    };
  } finally {
    await nc.close();
    // A failed proof keeps every service's log for the investigation (DROVER_KEEP_LOGS=1: a passing one too).
    await cp.stop(!pass || process.env.DROVER_KEEP_LOGS === "1");
  }
}

/** Assertion 7: replay validation of every run (its executions) and every incident, from the log alone. */
function replayAssertion(
  log: readonly StoredEvent[],
  runs: readonly { sharedRunId: string }[],
  kills: readonly KillRecord[],
  storedOutputs: ReadonlyMap<string, string>,
): AssertionResult {
  const digest = (x: string) => createHash("sha256").update(x).digest("hex");
  const incidents = new Set(
    log.flatMap((e) => (e.event.type === "runtime.fenced" ? [e.event.data.incidentId as string] : [])),
  );
  const results = [
    ...runs.map((r) => validateRunLog(r.sharedRunId, log, { digest, storedOutputs })),
    ...[...incidents].map((i) => validateIncidentLog(i, log, { digest, storedOutputs })),
  ];
  const failures = results.flatMap((r) =>
    r.kind === "divergence"
      ? [`${r.scope}: ${r.divergence.invariant} at seq ${r.divergence.seq}: ${r.divergence.message}`]
      : [],
  );
  return {
    name: "replay: every run, execution and incident validates against the log",
    ok: failures.length === 0,
    violations: failures.length,
    detail:
      failures.length === 0
        ? `${runs.length} runs and ${incidents.size} incidents (${kills.length} kills) match${storedOutputs.size > 0 ? `, ${storedOutputs.size} stored outputs included` : ""}`
        : failures.slice(0, 3).join("; "),
  };
}

async function waitForTimelines(
  store: ReturnType<typeof createEventStore>,
  prefix: string,
  kills: number,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const count = async (filter: string, f: (e: StoredEvent) => number) => {
    let n = 0;
    await store.replay({ seq: 1 }, (e) => void (n += f(e)), { filter });
    return n;
  };
  while (Date.now() < deadline) {
    // Every item of every recovery plan (one per kill at least) has its completed record.
    const planned = await count(`${prefix}.runtime.*.recovery-planned`, (e) =>
      e.event.type === "runtime.recovery-planned" ? e.event.data.items.length : 0,
    );
    const done = await count(`${prefix}.forensics.*.*.execution-recovery-completed`, () => 1);
    if (planned >= kills && done >= planned) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The final line (proof-and-bench.md): violation counts per assertion, then PASS or the first broken assertion. */
export function proofLine(r: ProofReport): string {
  const failed = r.assertions.find((a) => !a.ok);
  const n = (prefix: string) =>
    r.assertions.filter((a) => a.name.startsWith(prefix)).reduce((s, a) => s + a.violations, 0);
  return (
    `proof: P=${r.options.parallel} transport=${r.options.transport} host=${r.options.host}${r.options.exposure ? `(${r.options.exposure})` : ""}${r.options.natsCluster ? ` nats=${r.options.natsCluster}-node${r.options.killNatsLeader ? "(leader killed)" : ""}` : ""}${r.options.workload === "builtin" ? "" : ` workload=${r.options.workload}`} runs=${r.runs} recovered=${r.recovered}${r.sendsFailed ? ` sends_failed=${r.sendsFailed}` : ""}${r.notPlaced ? ` not_placed_at_kill=${r.notPlaced}` : ""} ` +
    `duplicates=${n("duplicates")} lost=${n("lost")} safe_leaks=${n("safe_leaks")} fence_violations=${n("fence_violations")} replay_failures=${n("replay")} ` +
    `result=${r.pass ? "PASS" : `FAIL (${failed?.name}: ${failed?.detail})`}`
  );
}
