/**
 * The forensics process: wiring only. Projects the DROVER stream into the MongoDB read models
 * (MONGO_URL, database from DROVER_MONGO_DB or `drover_<controlPlaneId>`), rebuilds them on a
 * request to `drover-ctl.<controlPlaneId>.forensics.rebuild`, and rebuilds by itself when the
 * database is dropped under it (checked every DROVER_FORENSICS_WATCHDOG_MS, default 5000).
 * One replica per database: two would race their rebuilds.
 */
import { Gauge } from "prom-client";
import { bootstrap } from "../../platform/bootstrap.ts";
import { startPatiently } from "../../platform/patient-start.ts";
import { controlSubject, readModelClient, readModelDbName } from "../../platform/read-model-db.ts";
import { skipRecorder } from "../../streams/index.ts";
import { serveRebuild } from "./shell/control.ts";
import { startForensics } from "./shell/service.ts";

const ctx = await bootstrap("forensics");
const mongoUrl = process.env.MONGO_URL;
if (!mongoUrl) {
  process.stderr.write("forensics: cannot start: MONGO_URL is required\n");
  process.exit(1);
}
const client = readModelClient(mongoUrl);
const dbName = readModelDbName(process.env, ctx.config.controlPlaneId);
const service = await startPatiently(
  () =>
    startForensics({
      handle: ctx.nc,
      layout: ctx.layout,
      db: client.db(dbName),
      log: ctx.log,
      watchdogMs: Number(process.env.DROVER_FORENSICS_WATCHDOG_MS ?? 5_000),
      onSkip: skipRecorder(ctx.nc, ctx.layout, "forensics", ctx.log),
      // The live consumer itself failed (not poison: that is skipped): exit so the supervisor restarts it.
      onFatal: () => process.exit(1),
    }),
  (e) => ctx.log.warn({ err: String(e) }, "JetStream not answering at start-up: starting again"),
).catch((e: unknown) => {
  process.stderr.write(`forensics: cannot start: ${(e as Error).message}\n`);
  process.exit(1);
});
const subject = controlSubject(ctx.layout, ctx.config.controlPlaneId, "forensics", "rebuild");
const sub = serveRebuild(ctx.nc, subject, service, ctx.log);
ctx.log.info({ db: dbName, subject, position: service.position }, "forensics projector running");

// Read-model lag: the event stream's last sequence minus the sequence the projector applied.
const lag = async () => (await ctx.jsm.streams.info(ctx.layout.eventStream)).state.last_seq - service.position;
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
  const detail = `applied up to ${service.position}, ${behind} behind`;
  return { status: behind > 1000 ? "degraded" : "ok", detail };
});

ctx.onShutdown(async () => {
  sub.unsubscribe();
  await service.stop();
  await client.close();
});
