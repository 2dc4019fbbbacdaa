import { CapacityRebuildReply, decodeJson } from "../../contracts/index.ts";
import { EXIT, type Command } from "./command.ts";
import { requestRebuild } from "./rebuild-request.ts";

/**
 * `drover capacity-rebuild [--control-plane ID] [--nats URL] [--timeout-ms N] [--json]`: asks the
 * capacity service of a control plane to drop its Redis capacity view and rebuild it from stream
 * sequence 1, waits for the reply and prints what the rebuilt view holds. The control plane id
 * comes from the flag or from DROVER_CONFIG (default config/drover.local.json); NATS from the flag
 * or NATS_URL. Exit 0 rebuilt, 2 bad arguments or config, 3 NATS unreachable, no capacity service
 * answered within the timeout, or the rebuild failed.
 */
export const capacityRebuildCommand: Command = {
  name: "capacity-rebuild",
  summary: "rebuild a control plane's Redis capacity view from stream sequence 1 and print what it holds",
  usage: "drover capacity-rebuild [--control-plane ID] [--nats URL] [--timeout-ms N] [--json]",
  async run(args, io) {
    const a = await requestRebuild("capacity", args, io, 30_000);
    const reply = decodeJson(CapacityRebuildReply, a.data, "capacity rebuild reply", { subject: a.subject });
    if (!reply.ok) {
      io.err(
        `drover capacity-rebuild: the capacity service of ${a.controlPlaneId} failed to rebuild: ${reply.error}\n`,
      );
      return EXIT.unavailable;
    }
    io.out(
      a.json
        ? `${JSON.stringify({ controlPlaneId: a.controlPlaneId, ...reply }, null, 2)}\n`
        : [
            `capacity view of ${a.controlPlaneId} rebuilt from stream sequence 1 in ${reply.ms} ms`,
            `runtimes in the view: ${reply.runtimes.length}${reply.runtimes.length ? ` (${reply.runtimes.join(", ")})` : ""}`,
            `runtime events folded: ${reply.eventsFolded}, up to stream sequence ${reply.lastSeq}`,
            `heartbeats folded: ${reply.heartbeatsFolded}`,
            "",
          ].join("\n"),
    );
    return EXIT.ok;
  },
};
