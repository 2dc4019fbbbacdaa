/**
 * The provisioner's responders thread (responders.ts starts it): its own NATS connection, under the
 * provisioner's identity, answering the runtimes' auth callout and history requests on its own
 * event loop. Configured by `workerData` (RespondersConfig); tells the parent `ready` once both
 * subscriptions are on the server, logs through the parent, and on `stop` drains and says `stopped`.
 */
import { parentPort, workerData } from "node:worker_threads";
import { jetstreamManager } from "@nats-io/jetstream";
import { connectNats } from "../../../platform/nats-connect.ts";
import { standingFromLog, startRuntimeCallout } from "../../../platform/nats-auth/callout.ts";
import { startHistoryResponder } from "../../../streams/history-responder.ts";
import type { RespondersConfig, ResponderMessage } from "./responders.ts";

const port = parentPort!;
const cfg = workerData as RespondersConfig;
const say = (m: ResponderMessage) => port.postMessage(m);
const log = (level: "info" | "warn") => (fields: Record<string, unknown>, msg: string) =>
  say({ kind: "log", level, fields, msg });

const nc = await connectNats({
  servers: cfg.servers,
  ...(cfg.creds ? { creds: cfg.creds } : {}),
  ...(cfg.caFile ? { caFile: cfg.caFile } : {}),
  name: cfg.name,
  maxReconnectAttempts: -1,
  noAsyncTraces: true,
});
const jsm = await jetstreamManager(nc, { checkAPI: false });
const history = startHistoryResponder(nc, jsm, cfg.layout, { log: log("warn") });
const callout = cfg.callout
  ? startRuntimeCallout({
      nc,
      layout: cfg.layout,
      secret: cfg.callout.secret,
      issuerSeed: cfg.callout.seed,
      ttlMs: cfg.callout.ttlMs,
      standing: standingFromLog(jsm, cfg.layout),
      now: Date.now,
      log: log("info"),
    })
  : undefined;
await nc.flush();
port.on("message", (m: unknown) => {
  if (m !== "stop") return;
  callout?.unsubscribe();
  history.unsubscribe();
  void nc
    .drain()
    .catch(() => undefined)
    .then(() => {
      say({ kind: "stopped" });
      port.close();
    });
});
say({ kind: "ready" });
