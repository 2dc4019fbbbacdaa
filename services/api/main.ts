/**
 * The api process: wiring only. Starts like every service (platform/bootstrap.ts: config, NATS,
 * streams, signals), starts the quota projection when a tenant rejects over quota, opens the
 * forensics read models when MONGO_URL is set, listens on
 * config.api and prints one JSON line {"event":"listening","port":N}. SIGINT/SIGTERM close the
 * server (ending live event feeds), then the bootstrap drains the NATS connection.
 */
import { bootstrap } from "../../platform/bootstrap.ts";
import { systemClock } from "../../platform/envelope.ts";
import { createOutputStore } from "../../platform/output-store.ts";
import { readModelClient, readModelDbName } from "../../platform/read-model-db.ts";
import { tokenTable } from "./domain/access.ts";
import { buildApp } from "./http/app.ts";
import { replayCapacityReader } from "./shell/capacity-reader.ts";
import { jetStreamFeed } from "./shell/event-feed.ts";
import { randomIdGenerator } from "./shell/ids.ts";
import { startOpenRunsProjection } from "./shell/open-runs-projection.ts";
import { mongoReadModels } from "./shell/read-models.ts";
import { portFileIn, removePortFile, writePortFile } from "./shell/startup.ts";

// Logs go to stderr so stdout carries exactly one line, the listening announcement.
const ctx = await bootstrap("api", { logTo: process.stderr });
const { config, layout, store, js, jsm } = ctx;
// Lazy: the API starts without MongoDB and answers the forensics queries once it is reachable.
const mongoUrl = process.env.MONGO_URL || undefined;
const mongo = mongoUrl ? readModelClient(mongoUrl) : undefined;
if (mongo) ctx.onShutdown(() => mongo.close());
const readModels = mongo ? mongoReadModels(mongo.db(readModelDbName(process.env, config.controlPlaneId))) : undefined;
const openRuns = config.tenants.some((t) => t.overQuota === "reject")
  ? await startOpenRunsProjection(js, jsm, layout)
  : undefined;
if (openRuns) ctx.onShutdown(() => openRuns.stop());

const app = await buildApp(
  {
    config,
    tokens: tokenTable(config.tokens),
    layout,
    store,
    feed: jetStreamFeed(js, jsm, layout),
    capacity: replayCapacityReader(store, jsm, layout),
    openRuns,
    readModels,
    outputs: createOutputStore(ctx.nc, layout),
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
