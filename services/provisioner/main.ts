/**
 * Provisioner process: wiring only. Reads DROVER_CONFIG, NATS_URL and DROVER_STREAM_TAG (via the
 * common bootstrap), DROVER_COMMAND_SECRET, and optionally DROVER_RUNTIME_LOG_DIR (runtime logs,
 * default .run/runtimes) and DROVER_SCALEOUT_ACK_WAIT_MS (redelivery delay after a crash, default
 * 30 s); starts the process host strategy (and the Kubernetes one when DROVER_CONFIG configures it) and `maxConcurrentHostStartups` + warm pool sizes pull loops on the
 * shared scale-out consumer; answers runtimes' auth callout and history requests
 * (streams/history-responder.ts) on a thread of their own (shell/responders.ts). SIGTERM/SIGINT stop the loops (in-flight requests settle) and
 * then stop (planned stop: retired with proof) the runtimes this process spawned and those it adopted
 * (a SIGKILLed provisioner's, shell/adopted-hosts.ts); SIGKILL leaves them running for the next
 * provisioner to adopt.
 */
import { randomUUID } from "node:crypto";
import { systemClock } from "../../platform/clock.ts";
import { bootstrap } from "../../platform/bootstrap.ts";
import { commandSecretFromEnv, commandTokenFor } from "../../platform/command-token.ts";
import { kubernetesStrategyFromConfig } from "../../platform/hosts/kubernetes/from-config.ts";
import { createProcessStrategy } from "../../platform/hosts/process-strategy.ts";
import type { HostStrategy } from "../../platform/hosts/types.ts";
import { tenantSettingsOf, type HostProvider } from "../../contracts/index.ts";
import { runtimeCommand } from "../../platform/hosts/runtime-bundle.ts";
import { bundledWorker } from "../../platform/hosts/worker-builds.ts";
import { rosterPods } from "./domain/kubernetes-worker.ts";
import { deployCurrentBuilds } from "./shell/deploys.ts";
import { watchDrainedRuntimes } from "./shell/retire-drained.ts";
import { consumeScaleOutRequests, scaleOutPullLoops } from "./shell/consumer.ts";
import type { ProvisionerDeps } from "./shell/context.ts";
import { createProvisioner } from "./shell/provisioner.ts";
import { stopHosts } from "./shell/stop-hosts.ts";
import { lastBeatReader } from "./shell/drained-exit.ts";
import { adoptedHosts } from "./shell/adopted-hosts.ts";
import { randomSuffix } from "./shell/suffix.ts";
import { runtimeCalloutFromEnv } from "../../platform/nats-auth/callout-from-env.ts";
import { maxEndedRuntimesOf, snapshotsFromEnv } from "../../platform/snapshots/from-env.ts";
import { startResponders } from "./shell/responders.ts";

const ctx = await bootstrap("provisioner");
// bootstrap already refused a missing or placeholder secret outside DROVER_DEV=1 (and warned inside it).
const { secret } = commandSecretFromEnv();
const strategy = createProcessStrategy({
  command: runtimeCommand((why) =>
    ctx.log.warn({ why }, "runtime bundle unavailable; starting runtimes from source through tsx"),
  ),
  onOutput: (id, line) => ctx.log.debug({ runtimeInstanceId: id, line }, "runtime output"),
  ...(process.env.DROVER_RUNTIME_LOG_DIR ? { logDir: process.env.DROVER_RUNTIME_LOG_DIR } : {}),
});
// Kubernetes hosts only when DROVER_CONFIG has a `kubernetes` section, process hosts unless
// `processHosts` is "refused" (a cluster deployment: recovery in another Pod could not fence them);
// otherwise a runtime asking for them is rejected with host-config-missing by the plan.
const strategies = new Map<HostProvider, HostStrategy>(
  ctx.config.processHosts === "allowed" ? [["process", strategy]] : [],
);
if (ctx.config.kubernetes) strategies.set("kubernetes", kubernetesStrategyFromConfig(ctx.config.kubernetes));
const natsUrl = process.env.NATS_URL as string;
// The auth callout for runtimes (DROVER_NATS_CALLOUT_SEED): runtime credentials are minted here.
// Runtimes read their executions' and runs' histories here, not by consumers of their own
// (streams/history-responder.ts; docs/nats-identities.md): every replica answers, one queue group.
// Both answer on their own thread and connection (same identity), not behind this loop's work.
const callout = runtimeCalloutFromEnv(ctx.layout, secret);
const responders = await startResponders(
  {
    servers: natsUrl,
    ...(process.env.NATS_CREDS ? { creds: process.env.NATS_CREDS } : {}),
    ...(process.env.NATS_CA_FILE ? { caFile: process.env.NATS_CA_FILE } : {}),
    name: `${ctx.instanceId}-responders`,
    layout: ctx.layout,
    ...(callout ? { callout: { seed: callout.seed, secret, ttlMs: callout.ttlMs } } : {}),
  },
  ctx.log,
);
const deps: ProvisionerDeps = {
  store: ctx.store,
  // A drained runtime's exit (a stop from outside drover) is a planned stop (shell/drained-exit.ts).
  latestBeat: lastBeatReader(ctx.jsm, ctx.layout),
  layout: ctx.layout,
  strategies,
  instanceId: ctx.instanceId,
  natsUrl,
  ...(process.env.NATS_CA_FILE ? { natsCaFile: process.env.NATS_CA_FILE } : {}),
  ...(callout ? { natsCredsFor: callout.credsFor } : {}),
  ...(process.env.DROVER_STREAM_TAG ? { streamTag: process.env.DROVER_STREAM_TAG } : {}),
  heartbeatMs: ctx.config.heartbeatIntervalMs,
  ...(ctx.config.llmBaseUrl ? { llmBaseUrl: ctx.config.llmBaseUrl } : {}),
  tenantSettings: (tenantId) => tenantSettingsOf(ctx.config, tenantId),
  egress: Object.fromEntries(ctx.config.tenants.flatMap((t) => (t.egress ? [[t.tenantId, t.egress]] : []))),
  buildWorker: bundledWorker,
  ...(ctx.config.kubernetes ? { kubernetesImage: ctx.config.kubernetes.runtimeImage } : {}),
  secretEnv: process.env,
  clock: systemClock,
  newEventId: randomUUID,
  newSuffix: randomSuffix,
  commandTokenFor: (id) => commandTokenFor(secret, id),
  probeBudgetMs: 10_000,
  killBudgetMs: ctx.config.fenceDeadlineMs,
  maxConcurrentHostStartups: ctx.config.maxConcurrentHostStartups,
  log: (msg, fields) => ctx.log.info(fields ?? {}, msg),
  poolSizes: ctx.config.warmPool,
  controlPlaneId: ctx.config.controlPlaneId,
  // Starts from the roster's snapshot; ended runtimes beyond the bound leave memory (docs/snapshots.md).
  roster: {
    maxEnded: maxEndedRuntimesOf(process.env),
    snapshots: {
      ...snapshotsFromEnv(ctx.nc, ctx.layout, "provisioner", ctx.ops.registry, process.env),
      log: ctx.log,
      clock: systemClock,
    },
  },
};
const provisioner = createProvisioner(deps);
provisioner.pool.refill();
// Runtimes of a superseded worker version retire once their last pinned run ended (docs/worker-versions.md).
const k8s = strategies.get("kubernetes");
const drained = watchDrainedRuntimes(
  deps,
  [
    // Its own process hosts and those it adopted (a SIGKILLed provisioner's: adopted-hosts.ts).
    {
      strategy,
      liveHosts: async (r) => [...strategy.liveHosts(), ...(await adoptedHosts(deps, r, strategy.liveHosts()))],
    },
    ...(k8s ? [{ strategy: k8s, liveHosts: rosterPods }] : []),
  ],
  provisioner.roster,
  provisioner.retiring,
  {
    everyMs: Number(process.env.DROVER_DRAIN_CHECK_MS ?? 2_000),
    idleMs: Number(process.env.DROVER_DRAIN_IDLE_MS ?? 2 * ctx.config.dispatchTimeoutMs),
  },
);
// Deploys as events (docs/worker-versions.md): each tenant's current build is recorded as deployed
// now, without a runtime start, so an old version's live runtimes drain from here on; deploy
// requests (`drover workers deploy`) are answered at every drain check.
const workerTenants = ctx.config.tenants.flatMap((t) => (t.worker ? [t.tenantId] : []));
await deployCurrentBuilds(deps, workerTenants, "all");
let deployCheck: Promise<void> | undefined; // one at a time: a slow build never piles checks up
const deployChecks = setInterval(
  () => {
    deployCheck ??= deployCurrentBuilds(deps, workerTenants, "requested").finally(() => (deployCheck = undefined));
  },
  Number(process.env.DROVER_DRAIN_CHECK_MS ?? 2_000),
);
const runners = await consumeScaleOutRequests(
  ctx,
  ctx.layout,
  provisioner,
  scaleOutPullLoops(ctx.config.maxConcurrentHostStartups, ctx.config.warmPool),
  process.env.DROVER_SCALEOUT_ACK_WAIT_MS ? Number(process.env.DROVER_SCALEOUT_ACK_WAIT_MS) : undefined,
  undefined,
  (msg, fields) => ctx.log.warn(fields, msg),
);
ctx.onShutdown(async () => {
  clearInterval(deployChecks);
  await deployCheck;
  await Promise.all(runners.map((r) => r.stop()));
  await drained.stop();
  // Runtimes a SIGKILLed provisioner left are stopped like its own (adopted-hosts.ts), read before the roster stops.
  const adopted = await adoptedHosts(deps, await provisioner.roster.current(), strategy.liveHosts()).catch((e) => {
    ctx.log.warn({ err: String(e) }, "could not list adopted runtimes; they keep running");
    return [];
  });
  await provisioner.roster.stop();
  // Host exits are no longer recorded from here on: the kills below are a planned stop, not a crash.
  provisioner.close();
  const stopped = await stopHosts(deps, strategy, [...strategy.liveHosts(), ...adopted]);
  ctx.log.info({ stopped: Object.fromEntries(stopped) }, "process hosts stopped");
  await Promise.all([...strategies.values()].map((s) => s.close()));
  await responders.stop();
});
ctx.log.info({ parallel: runners.length }, "provisioner consuming scale-out requests");
