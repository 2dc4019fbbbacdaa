/**
 * The api process: wiring only. Reads the environment (see shell/startup.ts), connects to NATS,
 * ensures the streams, starts the run projection (queued-run cap, and quota for tenants that reject), opens the
 * forensics read models when MONGO_URL is set, listens on
 * config.api and prints one JSON line {"event":"listening","port":N}. SIGINT/SIGTERM close the
 * server (ending live event feeds) and drain the NATS connection.
 */
import { hostname } from "node:os";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { loadConfig } from "../../platform/bootstrap.ts";
import { createOutputStore } from "../../platform/output-store.ts";
import { readModelClient, readModelDbName } from "../../platform/read-model-db.ts";
import { createEventStore, ensureStreams } from "../../streams/index.ts";
import { isDevMode } from "../../platform/dev-mode.ts";
import { tokenTable } from "./shell/token-table.ts";
import { buildApp } from "./http/app.ts";
import { replayCapacityReader } from "./shell/capacity-reader.ts";
import { jetStreamFeed } from "./shell/event-feed.ts";
import { randomIdGenerator } from "./shell/ids.ts";
import { startOpenRunsProjection } from "./shell/open-runs-projection.ts";
import { mongoReadModels } from "./shell/read-models.ts";
import { readEnv, removePortFile, writePortFile } from "./shell/startup.ts";

const env = readEnv(process.env);
const config = loadConfig(env.configPath);
// Before anything connects: plaintext tokens outside DROVER_DEV=1 stop the API with one line.
let tokens: ReturnType<typeof tokenTable>;
try {
  tokens = tokenTable(config.tokens, { allowPlaintext: isDevMode() });
} catch (e) {
  process.stderr.write(`api: cannot start: ${(e as Error).message}\n`);
  process.exit(1);
}
if (isDevMode()) process.stderr.write("api: development mode (DROVER_DEV=1): plaintext tokens accepted\n");
const nc = await connect({ servers: env.natsUrl, name: "drover-api" });
const js = jetstream(nc);
const jsm = await jetstreamManager(nc);
await ensureStreams(jsm, env.layout);
const store = createEventStore(nc, env.layout);
// Lazy: the API starts without MongoDB and answers the forensics queries once it is reachable.
const mongo = env.mongoUrl ? readModelClient(env.mongoUrl) : undefined;
const readModels = mongo ? mongoReadModels(mongo.db(readModelDbName(process.env, config.controlPlaneId))) : undefined;
// Always on: it counts every tenant's queued runs (maxQueuedRuns) and, for overQuota "reject", open runs.
const openRuns = await startOpenRunsProjection(js, jsm, env.layout);

// Logs go to stderr so stdout carries exactly one line, the listening announcement.
const app = await buildApp(
  {
    config,
    tokens,
    layout: env.layout,
    store,
    feed: jetStreamFeed(js, jsm, env.layout),
    capacity: replayCapacityReader(store, jsm, env.layout),
    openRuns,
    readModels,
    outputs: createOutputStore(nc, env.layout),
    clock: () => new Date(),
    newId: randomIdGenerator,
    instanceId: `api-${hostname()}-${process.pid}`,
  },
  { logger: { level: process.env.LOG_LEVEL ?? "info", stream: process.stderr } },
);

await app.listen({ host: config.api.host, port: config.api.port });
const address = app.server.address();
const port = typeof address === "object" && address ? address.port : config.api.port;
writePortFile(env.portFile, port);
console.log(JSON.stringify({ event: "listening", port, host: config.api.host }));

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  app.log.info({ signal }, "stopping");
  removePortFile(env.portFile);
  // In-flight requests get a grace period; sockets still open after it (e.g. a client's idle
  // pre-opened connection) must not keep the process alive.
  setTimeout(() => app.server.closeAllConnections(), 5_000).unref();
  await app.close();
  await openRuns?.stop();
  await mongo?.close();
  await nc.drain();
  process.exit(0);
};
process.once("SIGINT", () => void stop("SIGINT"));
process.once("SIGTERM", () => void stop("SIGTERM"));
