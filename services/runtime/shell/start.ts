/**
 * The runtime instance, started from an environment: validates identity and sizing (refusing to
 * start, with one line per bad variable, when they do not validate), connects to NATS, serves the
 * command API on its transport, heartbeats, and drains on SIGTERM. Prints one JSON line
 * `{"event":"listening",...}` on stdout once commands can reach it, so a parent learns the port.
 * Called by main.ts at once (a cold start) or after a pool binding (pool-bind.ts, a warm start).
 */ import { randomUUID } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { jetstreamManager } from "@nats-io/jetstream";
import { connectNats } from "../../../platform/nats-connect.ts";
import type { NatsConnection } from "@nats-io/transport-node";
import { systemClock } from "../../../platform/clock.ts";
import { pino } from "pino";
import { Gauge } from "prom-client";
import { startOpsServer } from "../../../platform/ops-server.ts";
import { selfIncarnation } from "../../../platform/process-incarnation.ts";
import {
  createEventStore,
  DEFAULT_LAYOUT,
  ensureStreamsPatiently,
  execRef,
  heartbeatSubject,
  taggedLayout,
} from "../../../streams/index.ts";
import { EgressSettings } from "../../../contracts/index.ts";
import { parseRuntimeConfig } from "../domain/runtime-config.ts";
import { startGrpcServer } from "../grpc/server.ts";
import { startHttpServer, type PreparedHttpServer } from "../http/server.ts";
import { createCommandHandler } from "./command-handler.ts";
import { HeartbeatPublisher } from "./heartbeat.ts";
import { RuntimeInstance } from "./runtime-instance.ts";
import { createOutputStore } from "../../../platform/output-store.ts";
import { createStepCacheStore } from "../../../platform/step-cache-store.ts";
import { compileEgress } from "./egress-request.ts";
import { createSecretResolver } from "./secrets.ts";
import { runStep } from "./step-runners.ts";
import { natsSignalFeeds } from "./signal-feed.ts";
import { loadWorker, offeredKinds, type LoadedWorker } from "./worker-module.ts";
import { WorkerPool } from "./worker-pool.ts";
import { stopOnSignal, watchConnection } from "./stop.ts";

/**
 * Starts the runtime from `env` (NATS_CREDS and DROVER_SECRETS_JSON are deleted from it once read); resolves once commands are served.
 * `prepared`: an HTTP command server a pooled runtime built before its binding (warm-up.ts), served
 * here instead of a new one when the transport is HTTP (closed unused otherwise).
 */
export async function startRuntime(
  env: NodeJS.ProcessEnv,
  prepared?: PreparedHttpServer,
): Promise<{ readonly port: number; readonly hostIncarnation: string }> {
  // Where a start's time goes (ms since the call, in the `listening` line): a warm bind is all of it;
  // `cpu` is this process's CPU ms over the same span (what a burst of binds competes for).
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const phases: Record<string, number> = {};
  const mark = (name: string): void => void (phases[name] = Math.round(performance.now() - t0));
  const parsed = parseRuntimeConfig(env);
  if (!parsed.ok) {
    for (const p of parsed.problems) process.stderr.write(`drover runtime: invalid configuration: ${p}\n`);
    process.exit(2);
  }
  const config = parsed.config;
  const hostIncarnation = selfIncarnation(config.podUid);
  // NATS_CREDS leaves the environment like the secrets: only the connection holds it. The connection is
  // opened first: its handshake waits on the server and the auth callout (another process), and the
  // logger, egress policies, secrets and worker below are set up meanwhile instead of before it.
  delete env.NATS_CREDS;
  const connecting = patientlyConnected(() =>
    connectNats({
      servers: config.natsUrl,
      creds: config.natsCreds ?? "",
      name: `drover-runtime-${config.runtimeInstanceId}`,
      maxReconnectAttempts: -1,
      // After a nats-server restart the auth callout (the provisioner) may not answer yet: never stop
      // reconnecting because the same auth error came twice (nats.js's default).
      ignoreAuthErrorAbort: true,
      // A reconnect whose handshake hangs is abandoned after this and tried again, instead of after
      // nats.js's 20 s: after a restart a runtime's reconnect hung with no status event for 7 s and
      // more, the runtime alive but silent, and it was fenced (nats-outage.e2e: 3 of 3 on main, 0 of 4
      // with this). The first connection gets the same timeout, tried again for a minute.
      timeout: 4_000,
      // No stack captured per request: two Error objects per journaled step were ~6% of the runtime's
      // CPU (bench/runtime-steps profile); a failed request still names its subject and cause.
      noAsyncTraces: true,
    }),
  );
  // Awaited below; a failure meanwhile is not unhandled (it fails the start there).
  connecting.catch(() => undefined);
  // pino with the control plane's field names (service, instanceId), one JSON line per entry on stdout:
  // the provisioner reads the `listening` line from it (platform/hosts/startup-announcement.ts).
  const logger = pino({
    name: "runtime",
    base: { service: "runtime", instanceId: config.runtimeInstanceId, runtimeInstanceId: config.runtimeInstanceId },
    level: env.LOG_LEVEL ?? "info",
  });
  const log = (fields: Record<string, unknown>): void => logger.info(fields);

  // Secrets handed over by the provisioner leave the environment at once: only the resolver holds them.
  // Each tenant's http/llm steps run under its own egress policy; a tenant not named gets the default.
  const egressPolicies = new Map(Object.entries(config.egress).map(([t, s]) => [t, compileEgress(s)]));
  const defaultEgress = compileEgress(EgressSettings.parse({}));
  const secrets = createSecretResolver(config.secretsFile, env.DROVER_SECRETS_JSON);
  delete env.DROVER_SECRETS_JSON;
  let worker: LoadedWorker | undefined;
  if (config.worker) {
    try {
      worker = await loadWorker(config.worker.module, config.worker.kinds);
    } catch (e) {
      process.stderr.write(`drover runtime: ${(e as Error).message}\n`);
      process.exit(3);
    }
  }

  const layout = config.streamTag ? taggedLayout(config.streamTag) : DEFAULT_LAYOUT;
  // No API round trip of its own (checkAPI): the stream checks are the first requests, and an
  // unavailable JetStream there is waited out, as a first request during an election should be.
  const jsmOpened = connecting.then((c) => jetstreamManager(c, { checkAPI: false }));
  jsmOpened.catch(() => undefined);
  // The ops listener (its registry, default metrics and socket) is set up while the handshake waits
  // on the server and the auth callout, not after it: a warm bind waited ~35-45 ms for it at load
  // ~10 after `connected`. Its `nats` and `streams` checks fail until the connection is open, and
  // `commands` (below) until the command listener is bound: /readyz says ready no sooner than before.
  const opsStarted = startOpsServer({
    service: "runtime",
    instanceId: config.runtimeInstanceId,
    log: logger,
    nc: connecting,
    jsm: jsmOpened,
    layout,
  });
  opsStarted.catch(() => undefined);

  mark("code");
  const nc = await connecting;
  mark("connected");
  const jsm = await jsmOpened;
  // Whether the log is compactable is the deployment's choice, checked by the services (docs/retention.md).
  // The check (one round trip) runs while the runtime's parts are set up; the command listener is
  // bound only after it passed, so no command is served before the streams are proven.
  const streamsChecked = ensureStreamsPatiently(jsm, layout, { anyPurgePolicy: true }).then(() => mark("streams"));
  streamsChecked.catch(() => undefined);
  const ops = await opsStarted;
  mark("ops");
  // Ready (the Pod's readiness probe on Kubernetes) only once the command listener below is bound.
  let commandsBound = false;
  ops.addCheck("commands", async () =>
    commandsBound
      ? { status: "ok", detail: `${config.transport} listener bound` }
      : { status: "failing", detail: `${config.transport} listener not bound yet` },
  );
  // Subject-scoped reads: its NATS rights let it read only its tenants' events (docs/nats-identities.md).
  // Its executions' appends leave together (streams/publish-gate.ts): one socket write for many steps.
  const store = createEventStore(nc, layout, { subjectScopedReads: true, coalescePublishes: true });

  const workers = new WorkerPool(config.sizing.workers);
  const outputs = createOutputStore(nc, layout);
  const instance = new RuntimeInstance(
    config.sizing,
    {
      store,
      runtimeInstanceId: config.runtimeInstanceId,
      hostIncarnation,
      clock: systemClock,
      newEventId: randomUUID,
      sleep: (ms) => delay(ms),
      log,
    },
    {
      workers,
      maxWorkersPerRun: config.sizing.maxWorkersPerRun,
      runStep,
      llmBaseUrl: config.llmBaseUrl,
      egressFor: (tenantId) => egressPolicies.get(tenantId) ?? defaultEgress,
      clock: systemClock,
      log,
      outputs,
      // Run steps journal their child runs and follow them; admission submits them (docs/control-flow.md "Child runs").
      childRuns: { store, outputs, log },
      secrets,
      // Waits learn of their signals from one subscription per tenant with open waits (signal-feed.ts).
      signals: { store, feeds: natsSignalFeeds(nc, layout, store, log), log },
      ...(worker ? { worker } : {}),
      // The step cache's index, and the journals its entries point at, on the tenant's own subjects.
      stepCache: {
        index: createStepCacheStore(nc, layout),
        journal: async (tenantId, executionId) => (await store.read(execRef(tenantId, executionId))).events,
      },
    },
    hostIncarnation,
  );
  const handler = createCommandHandler({
    runtimeInstanceId: config.runtimeInstanceId,
    hostIncarnation,
    token: config.commandToken,
    instance,
    clock: systemClock,
  });
  const heartbeats = new HeartbeatPublisher(
    {
      subject: heartbeatSubject(layout, config.runtimeInstanceId),
      runtimeInstanceId: config.runtimeInstanceId,
      hostIncarnation,
      instance,
      publish: (s, d) => nc.publish(s, d),
      clock: systemClock,
      log,
    },
    config.heartbeatMs,
  );
  instance.onPlaceFreed = () => heartbeats.soon();

  await streamsChecked;
  if (prepared && config.transport !== "http") await prepared.server.close();
  const listening =
    config.transport === "http"
      ? await (
          prepared
            ? prepared.serve(handler, config.bindHost, config.port)
            : startHttpServer(handler, config.bindHost, config.port)
        ).then((s) => ({
          port: s.port,
          close: () => s.server.close(),
        }))
      : await startGrpcServer(handler, config.bindHost, config.port).then((s) => ({
          port: s.port,
          close: () => new Promise<void>((ok) => s.server.tryShutdown(() => ok())),
        }));
  commandsBound = true;
  mark("listening");
  const cpu = process.cpuUsage(cpu0);
  phases.cpu = Math.round((cpu.user + cpu.system) / 1000);
  heartbeats.start();
  new Gauge({
    name: "drover_runtime_available_slots",
    help: "this runtime's free run slots as its heartbeat reports them",
    registers: [ops.registry],
    collect() {
      this.set(instance.queueStatus().availableSlots);
    },
  });
  log({
    event: "listening",
    port: listening.port,
    transport: config.transport,
    hostIncarnation,
    controlPlaneId: config.controlPlaneId,
    tenantId: config.tenantId ?? null,
    stepKinds: offeredKinds(worker),
    startMs: phases,
  });

  // SIGTERM drains: no new runs, finish what was accepted (a paused queue's runs are handed back),
  // a last heartbeat saying so, then exit; bounded once NATS is unreachable (stop.ts).
  const connection = watchConnection(nc);
  process.on(
    "SIGTERM",
    stopOnSignal(
      {
        nc,
        drain: () => instance.drain(),
        whenIdle: () => instance.whenIdle(),
        leftRuns: () => instance.unfinished(),
        beat: () => heartbeats.publishNow(),
        stopBeats: () => heartbeats.stop(),
        closeListeners: async () => {
          await listening.close();
          await ops.close();
        },
        log,
        exit: (code) => process.exit(code),
        budgetMs: config.stopBudgetMs,
      },
      connection,
    ),
  );
  return { port: listening.port, hostIncarnation };
}

/** The first connection, tried again while its handshake times out (connect's `timeout`), for up to a minute. */
async function patientlyConnected(open: () => Promise<NatsConnection>, budgetMs = 60_000): Promise<NatsConnection> {
  const until = Date.now() + budgetMs;
  for (;;) {
    try {
      return await open();
    } catch (e) {
      if ((e as Error)?.name !== "TimeoutError" || Date.now() >= until) throw e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
