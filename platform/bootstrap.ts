import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { resolve } from "node:path";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectNats } from "./nats-connect.ts";
import { Redis } from "ioredis";
import { pino, type Logger } from "pino";
import { DroverConfig, isSubjectSafeId, validate } from "../contracts/index.ts";
import { commandSecretFromEnv, commandTokenFor } from "./command-token.ts";
import { startOpsServer, type OpsServer } from "./ops-server.ts";
import {
  createEventStore,
  DEFAULT_LAYOUT,
  ensureStreamsPatiently,
  eventCompactionFromEnv,
  taggedLayout,
  type EventStore,
  type EventStoreOptions,
  type StreamLayout,
} from "../streams/index.ts";

/** What every control-plane service process starts with. */
export interface ServiceContext {
  readonly service: string;
  readonly instanceId: string;
  readonly config: DroverConfig;
  readonly layout: StreamLayout;
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly store: EventStore;
  readonly redis?: Redis;
  readonly log: Logger;
  /** The process's `/healthz`, `/readyz` and `/metrics` listener (DROVER_OPS_HOST, DROVER_OPS_PORT). */
  readonly ops: OpsServer;
  /** The command token of a runtime instance, derived from DROVER_COMMAND_SECRET (see command-token.ts). */
  commandTokenFor(runtimeInstanceId: string): string;
  /** Registers a hook run on SIGTERM/SIGINT before the connections close (last registered runs first). */
  onShutdown(fn: () => Promise<void> | void): void;
}

const ROOT = resolve(import.meta.dirname, "..");

/** Reads and validates DROVER_CONFIG (default config/drover.local.json); a bad file stops start-up with the schema's message. */
export function loadConfig(
  path = process.env.DROVER_CONFIG ?? resolve(ROOT, "config/drover.local.json"),
): DroverConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new Error(`cannot read DROVER_CONFIG ${path}: ${(e as Error).message}`);
  }
  return validate(DroverConfig, raw, `DROVER_CONFIG ${path}`);
}

/** The stream layout: DROVER_STREAM_TAG (tests) or the production default. */
export function layoutFromEnv(): StreamLayout {
  const tag = process.env.DROVER_STREAM_TAG;
  if (tag === undefined || tag === "") return DEFAULT_LAYOUT;
  if (!isSubjectSafeId(tag)) throw new Error(`DROVER_STREAM_TAG ${JSON.stringify(tag)} is not lowercase [a-z0-9-]`);
  return taggedLayout(tag);
}

function required(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
}

/**
 * Wires a service process: config, logger, NATS (streams ensured, server version checked by the
 * store), optionally Redis, and graceful shutdown on SIGTERM/SIGINT. Logs go to stdout unless
 * `logTo` names another stream (the api keeps stdout for its one listening line). Any start-up
 * failure exits 1 with one clear line on stderr — among them an unset, placeholder or short
 * DROVER_COMMAND_SECRET without DROVER_DEV=1 (platform/command-token.ts), unless the service
 * commands no runtime (`commandSecret: false`: the api) and so holds no secret at all. `store`
 * sets the event store's options (the api coalesces the publishes of its concurrent appends).
 */
export async function bootstrap(
  service: string,
  opts: { redis?: boolean; logTo?: NodeJS.WritableStream; commandSecret?: boolean; store?: EventStoreOptions } = {},
): Promise<ServiceContext> {
  try {
    // First: a service without a real command secret stops before it touches anything.
    const { secret, isDefault } =
      opts.commandSecret === false ? { secret: undefined, isDefault: false } : commandSecretFromEnv();
    const config = loadConfig();
    const layout = layoutFromEnv();
    const instanceId = process.env.DROVER_INSTANCE_ID ?? `${service}-${hostname()}-${process.pid}`;
    const log = pino(
      { name: service, base: { service, instanceId }, level: process.env.LOG_LEVEL ?? "info" },
      opts.logTo ?? process.stdout,
    );
    // No async traces (as the runtime, services/runtime/shell/start.ts): nats.js would otherwise build
    // two Error objects (stack captured) per request, every conditional append included, only to
    // append the caller's stack to a failure's; ~5% of admission's CPU at 1,000 runs/s (issue 15).
    const nc = await connectNats({
      servers: required("NATS_URL"),
      name: instanceId,
      maxReconnectAttempts: -1,
      noAsyncTraces: true,
    });
    const jsm = await jetstreamManager(nc);
    await ensureStreamsPatiently(jsm, layout, { compactable: eventCompactionFromEnv(process.env) });
    const js = jetstream(nc);
    const store = createEventStore(nc, layout, opts.store);
    const redis = opts.redis
      ? new Redis(required("REDIS_URL"), { maxRetriesPerRequest: 2, enableOfflineQueue: true })
      : undefined;
    redis?.on("error", (e) => log.warn({ err: e.message }, "redis error"));
    const ops = await startOpsServer({ service, instanceId, log, nc, jsm, layout });
    if (redis)
      ops.addCheck("redis", async () =>
        redis.status === "ready"
          ? { status: "ok", detail: "connected" }
          : { status: "failing", detail: `connection ${redis.status}` },
      );
    const hooks: (() => Promise<void> | void)[] = [];
    let closing = false;
    const shutdown = async (signal: string) => {
      if (closing) return;
      closing = true;
      log.info({ signal }, "shutting down");
      for (const h of hooks.reverse())
        await Promise.resolve(h()).catch((e) => log.error({ err: String(e) }, "shutdown hook failed"));
      await ops.close();
      await nc.drain().catch(() => undefined);
      redis?.disconnect();
      process.exit(0);
    };
    process.once("SIGTERM", () => void shutdown("SIGTERM"));
    process.once("SIGINT", () => void shutdown("SIGINT"));
    if (isDefault)
      log.warn("DROVER_DEV=1 and no real DROVER_COMMAND_SECRET: using the development secret (never in production)");
    log.info({ nats: nc.getServer(), layout: layout.eventStream, controlPlaneId: config.controlPlaneId }, "started");
    return {
      service,
      instanceId,
      config,
      layout,
      nc,
      js,
      jsm,
      store,
      redis,
      log,
      ops,
      commandTokenFor: (id) => {
        if (secret === undefined) throw new Error(`${service} holds no command secret: it commands no runtime`);
        return commandTokenFor(secret, id);
      },
      onShutdown: (fn) => hooks.push(fn),
    };
  } catch (e) {
    process.stderr.write(`${service}: cannot start: ${(e as Error).message}\n`);
    process.exit(1);
  }
}
