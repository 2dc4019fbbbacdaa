/**
 * The forensics process: wiring only. Projects the DROVER stream into the MongoDB read models
 * (MONGO_URL, database from DROVER_MONGO_DB or `drover_<controlPlaneId>`), rebuilds them on a
 * request to `drover-ctl.<controlPlaneId>.forensics.rebuild`, and rebuilds by itself when the
 * database is dropped under it (checked every DROVER_FORENSICS_WATCHDOG_MS, default 5000).
 * Any number of replicas: one at a time writes a database, the holder of its writer lease
 * (shell/single-writer.ts); the others stand by and take over within the lease TTL.
 */
import { Gauge } from "prom-client";
import { bootstrap } from "../../platform/bootstrap.ts";
import { startPatiently } from "../../platform/patient-start.ts";
import { controlSubject, readModelClient, readModelDbName } from "../../platform/read-model-db.ts";
import { skipRecorder } from "../../streams/index.ts";
import { serveRebuild } from "./shell/control.ts";
import { startForensics } from "./shell/service.ts";
import { runAsSingleWriter } from "./shell/single-writer.ts";

const ctx = await bootstrap("forensics");
const mongoUrl = process.env.MONGO_URL;
if (!mongoUrl) {
  process.stderr.write("forensics: cannot start: MONGO_URL is required\n");
  process.exit(1);
}
const client = readModelClient(mongoUrl);
const dbName = readModelDbName(process.env, ctx.config.controlPlaneId);
const subject = controlSubject(ctx.layout, ctx.config.controlPlaneId, "forensics", "rebuild");
const writer = runAsSingleWriter({
  js: ctx.js,
  layout: ctx.layout,
  name: dbName.replace(/[^A-Za-z0-9_-]/g, "_"),
  holder: ctx.instanceId,
  log: ctx.log,
  start: async (holding) => {
    const service = await startPatiently(
      () =>
        startForensics({
          handle: ctx.nc,
          layout: ctx.layout,
          db: client.db(dbName),
          log: ctx.log,
          watchdogMs: Number(process.env.DROVER_FORENSICS_WATCHDOG_MS ?? 5_000),
          onSkip: skipRecorder(ctx.nc, ctx.layout, "forensics", ctx.log),
          writable: () => !holding.aborted,
          // The live consumer itself failed (not poison: that is skipped): exit so the supervisor
          // restarts it — unless the lease was lost, which stopped the writes on purpose.
          onFatal: () => {
            if (!holding.aborted) process.exit(1);
          },
        }),
      (e) => ctx.log.warn({ err: String(e) }, "JetStream not answering at start-up: starting again"),
    );
    // Only the writer answers rebuild requests: a standby has nothing to rebuild.
    const sub = serveRebuild(ctx.nc, subject, service, ctx.log);
    ctx.log.info({ db: dbName, subject, position: service.position }, "forensics projector running");
    return {
      position: () => service.position,
      async stop() {
        sub.unsubscribe();
        await service.stop();
      },
    };
  },
});
writer.done.catch((e: unknown) => {
  process.stderr.write(`forensics: cannot start: ${(e as Error).message}\n`);
  process.exit(1);
});

// Read-model lag: the event stream's last sequence minus the sequence the projector applied.
const lag = async () =>
  (await ctx.jsm.streams.info(ctx.layout.eventStream)).state.last_seq - (writer.current?.position() ?? 0);
new Gauge({
  name: "drover_read_model_lag_events",
  help: "event stream last sequence minus the sequence the read models applied",
  registers: [ctx.ops.registry],
  async collect() {
    this.set(Math.max(0, await lag()));
  },
});
// The read-model store is reported, never a reason to be not-ready (the event-sourced paths do not need it).
ctx.ops.addCheck("readModels", async () => {
  const [behind, ping] = await Promise.all([
    lag(),
    client
      .db(dbName)
      .command({ ping: 1 })
      .then(
        () => "",
        (e: Error) => e.message,
      ),
  ]);
  if (ping) return { status: "degraded", detail: `MongoDB does not answer: ${ping}` };
  if (!writer.current) return { status: "ok", detail: "standing by: another replica holds the writer lease" };
  const detail = `applied up to ${writer.current.position()}, ${behind} behind`;
  return { status: behind > 1000 ? "degraded" : "ok", detail };
});

ctx.onShutdown(async () => {
  await writer.stop();
  await client.close();
});
