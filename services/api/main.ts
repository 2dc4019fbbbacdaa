/**
 * The api process: wiring only. Starts like every service (platform/bootstrap.ts: config, NATS,
 * streams, signals) but holds no command secret (it commands no runtime); refuses plaintext tokens
 * outside DROVER_DEV=1; starts the run projection (queued-run cap, and quota for tenants that
 * reject), opens the
 * forensics read models when MONGO_URL is set, listens on
 * config.api and prints one JSON line {"event":"listening","port":N}. SIGINT/SIGTERM close the
 * server (ending live event feeds), then the bootstrap drains the NATS connection.
 */
import { bootstrap, loadConfig } from "../../platform/bootstrap.ts";
import { systemClock } from "../../platform/envelope.ts";
import { createOutputStore } from "../../platform/output-store.ts";
import { createStepCacheStore } from "../../platform/step-cache-store.ts";
import { readModelClient, readModelDbName } from "../../platform/read-model-db.ts";
import { isDevMode } from "../../platform/dev-mode.ts";
import { maxTerminalRunsOf, snapshotsFromEnv } from "../../platform/snapshots/from-env.ts";
import { tokenTable } from "./shell/token-table.ts";
import { buildApp } from "./http/app.ts";
import { replayCapacityReader } from "./shell/capacity-reader.ts";
import { jetStreamFeed } from "./shell/event-feed.ts";
import { randomIdGenerator } from "./shell/ids.ts";
import { startOpenRunsProjection } from "./shell/open-runs-projection.ts";
import { mongoReadModels } from "./shell/read-models.ts";
import { portFileIn, removePortFile, writePortFile } from "./shell/startup.ts";

// Before anything connects: plaintext tokens outside DROVER_DEV=1 stop the API with one line.
let tokens: ReturnType<typeof tokenTable>;
try {
  tokens = tokenTable(loadConfig().tokens, { allowPlaintext: isDevMode() });
} catch (e) {
  process.stderr.write(`api: cannot start: ${(e as Error).message}\n`);
  process.exit(1);
}
if (isDevMode()) process.stderr.write("api: development mode (DROVER_DEV=1): plaintext tokens accepted\n");

// Logs go to stderr so stdout carries exactly one line, the listening announcement.
// Submissions arrive many at once under load: their appends share socket writes (streams/publish-gate.ts).
const ctx = await bootstrap("api", { logTo: process.stderr, commandSecret: false, store: { coalescePublishes: true } });
const { config, layout, store, js, jsm } = ctx;
// Lazy: the API starts without MongoDB and answers the forensics queries once it is reachable.
const mongoUrl = process.env.MONGO_URL || undefined;
const mongo = mongoUrl ? readModelClient(mongoUrl) : undefined;
if (mongo) ctx.onShutdown(() => mongo.close());
const readModels = mongo ? mongoReadModels(mongo.db(readModelDbName(process.env, config.controlPlaneId))) : undefined;
// Always on: it counts every tenant's queued runs (maxQueuedRuns) and, for overQuota "reject", open runs.
// It starts from its snapshot and folds only the tail when one is trusted (docs/snapshots.md).
const openRuns = await startOpenRunsProjection(js, jsm, layout, {
  maxClosed: maxTerminalRunsOf(process.env),
  snapshots: {
    ...snapshotsFromEnv(ctx.nc, layout, "api", ctx.ops.registry, process.env),
    log: ctx.log,
    clock: systemClock,
  },
});
ctx.onShutdown(() => openRuns.stop());

const app = await buildApp(
  {
    config,
    tokens,
    layout,
    store,
    feed: jetStreamFeed(js, jsm, layout),
    capacity: replayCapacityReader(store, jsm, layout),
    openRuns,
    readModels,
    outputs: createOutputStore(ctx.nc, layout),
    stepCache: createStepCacheStore(ctx.nc, layout),
    clock: systemClock,
    newId: randomIdGenerator,
    instanceId: ctx.instanceId,
  },
  { loggerInstance: ctx.log },
);

await app.listen({ host: config.api.host, port: config.api.port });
const address = app.server.address();
const port = typeof address === "object" && address ? address.port : config.api.port;
const portFile = portFileIn(process.env);
writePortFile(portFile, port);
console.log(JSON.stringify({ event: "listening", port, host: config.api.host }));

// Registered last, so it runs first on SIGTERM/SIGINT: the server closes (ending live event feeds)
// before the projection, MongoDB and NATS.
ctx.onShutdown(async () => {
  removePortFile(portFile);
  // In-flight requests get a grace period; sockets still open after it (e.g. a client's idle
  // pre-opened connection) must not keep the process alive.
  setTimeout(() => app.server.closeAllConnections(), 5_000).unref();
  await app.close();
});
