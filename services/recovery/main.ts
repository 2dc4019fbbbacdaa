import { hash } from "node:crypto";
import { Counter, Gauge } from "prom-client";
import { bootstrap } from "../../platform/bootstrap.ts";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { kubernetesStrategyFromConfig } from "../../platform/hosts/kubernetes/from-config.ts";
import { createProcessStrategy } from "../../platform/hosts/process-strategy.ts";
import { kickerFromEnv } from "../../platform/nats-auth/kick.ts";
import { RecoveryState } from "./shell/state.ts";
import {
  maxEndedRuntimesOf,
  maxFinishedForensicsOf,
  maxTerminalRunsOf,
  snapshotsFromEnv,
} from "../../platform/snapshots/from-env.ts";
import { registerRecoveryMetrics } from "./shell/metrics.ts";
import { startRecovery } from "./shell/service.ts";
import { warmUpIncidentParsers } from "./shell/warm-up.ts";

/** recovery: health → fence → classify and recover → forensics timelines. */
const ctx = await bootstrap("recovery");
// Fences process hosts by exact incarnation, proven through this process space's /proc only (a host
// of another machine or PID namespace is out of reach: fence-failed, never "gone"). None when
// DROVER_CONFIG refuses process hosts (a cluster deployment).
const processes = createProcessStrategy();
const fencesProcesses = ctx.config.processHosts === "allowed";
// Fences Pod incarnations (kill by UID) when DROVER_CONFIG configures Kubernetes hosts.
const pods = ctx.config.kubernetes ? kubernetesStrategyFromConfig(ctx.config.kubernetes) : undefined;
// The system-account identity that disconnects a fenced runtime at once (docs/nats-identities.md).
const kicker = await kickerFromEnv();
const state = new RecoveryState(ctx.layout.eventPrefix, (subject, seq, error) =>
  ctx.log.warn({ subject, seq, error }, "invalid event in the stream"),
);
// Terminal runs beyond the bound leave memory, except those an open forensics record names (docs/snapshots.md).
state.bound.max = maxTerminalRunsOf(process.env);
// Retired runtimes and completed forensics records beyond their bounds leave memory too (docs/snapshots.md).
state.retired.maxRuntimes = maxEndedRuntimesOf(process.env);
state.retired.maxForensics = maxFinishedForensicsOf(process.env);
// The fence-storm cap (health): silent runtimes held back from suspicion now, and holds over time.
const heldNow = new Gauge({
  name: "drover_recovery_suspicions_held",
  help: "silent runtimes the fence-storm cap keeps from being suspected this pass (maxStaleSuspicionShare)",
  registers: [ctx.ops.registry],
});
const holds = new Counter({
  name: "drover_recovery_suspicions_held_total",
  help: "times a silent runtime started being held back from suspicion by the fence-storm cap, by signal",
  labelNames: ["signal"],
  registers: [ctx.ops.registry],
});
const service = await startRecovery({
  onHeld: (held, entered) => {
    heldNow.set(held.length);
    for (const h of entered) holds.inc({ signal: h.code });
  },
  js: ctx.js,
  status: ctx.nc.status(),
  config: ctx.config,
  layout: ctx.layout,
  store: ctx.store,
  state,
  env: { writer: { service: "recovery", instanceId: ctx.instanceId }, clock: systemClock, ids: randomIds },
  hosts: (provider) =>
    provider === "process" ? (fencesProcesses ? processes : undefined) : provider === "kubernetes" ? pods : undefined,
  sha256: (s) => hash("sha256", s, "hex"),
  ...(kicker ? { kick: kicker.kick, disconnects: kicker.disconnects } : {}),
  log: ctx.log,
  snapshots: snapshotsFromEnv(ctx.nc, ctx.layout, "recovery", ctx.ops.registry, process.env),
});
await service.ready;
ctx.log.info({ runtimes: state.runtimes.size, runs: state.runs.size }, "recovery caught up");
// The parsers an incident needs, compiled now rather than between its fence and its pause (warm-up.ts).
let stopping = false;
void warmUpIncidentParsers(() => stopping).then(
  (schemas) => ctx.log.info({ schemas }, "incident parsers compiled"),
  (e: unknown) => ctx.log.warn({ err: String(e) }, "incident parsers not compiled ahead"),
);
registerRecoveryMetrics(ctx.ops.registry, state, ctx.config.controlPlaneId);
ctx.onShutdown(async () => {
  stopping = true;
  await service.stop();
  await processes.close();
  await pods?.close();
  await kicker?.close();
});
