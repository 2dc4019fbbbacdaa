import { createHash } from "node:crypto";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { bootstrap } from "../../platform/bootstrap.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { redisReservations } from "../../platform/reservations.ts";
import { closeRuntimeClients, sendCommand } from "../../platform/runtime-client.ts";
import { RunIndex } from "./shell/run-index.ts";
import { startAdmission } from "./shell/service.ts";

/** admission: places runs on tenant-visible capacity, queues them, asks for scale-out, dispatches. */
const ctx = await bootstrap("admission", { redis: true });
const cp = ctx.config.controlPlaneId;
const index = new RunIndex(
  ctx.layout.eventPrefix,
  (subject, seq, error) => ctx.log.warn({ subject, seq, error }, "invalid event in the stream"),
  systemClock,
);
const service = await startAdmission({
  js: ctx.js,
  config: ctx.config,
  layout: ctx.layout,
  store: ctx.store,
  index,
  view: redisCapacityView<CapacityDescriptor>(ctx.redis!, cp),
  reservations: redisReservations(ctx.redis!, cp),
  env: { writer: { service: "admission", instanceId: ctx.instanceId }, clock: systemClock, ids: randomIds },
  send: sendCommand,
  commandTokenFor: ctx.commandTokenFor,
  sha256: (s) => createHash("sha256").update(s).digest("hex"),
  log: ctx.log,
});
await service.ready;
ctx.log.info({ runs: index.runs.size }, "admission caught up and placing");
ctx.onShutdown(async () => {
  await service.stop();
  closeRuntimeClients();
});
