import { decodeJson, ForensicsRebuildReply } from "../../contracts/index.ts";
import { EXIT, type Command } from "./command.ts";
import { requestRebuild } from "./rebuild-request.ts";

/**
 * `drover forensics-rebuild [--control-plane ID] [--nats URL] [--timeout-ms N] [--json]`: asks the
 * forensics service of a control plane to drop its MongoDB read models and rebuild them from stream
 * sequence 1, waits for the reply (sent once the rebuild is complete) and prints the sequence
 * reached. Exit 0 rebuilt, 2 bad arguments or config, 3 NATS unreachable, no forensics service
 * answered within the timeout, or the rebuild failed.
 */
export const forensicsRebuildCommand: Command = {
  name: "forensics-rebuild",
  summary: "rebuild a control plane's MongoDB read models from stream sequence 1",
  usage: "drover forensics-rebuild [--control-plane ID] [--nats URL] [--timeout-ms N] [--json]",
  async run(args, io) {
    const a = await requestRebuild("forensics", args, io, 300_000);
    const reply = decodeJson(ForensicsRebuildReply, a.data, "forensics rebuild reply", { subject: a.subject });
    if (!reply.ok) {
      io.err(
        `drover forensics-rebuild: the forensics service of ${a.controlPlaneId} failed to rebuild: ${reply.error}\n`,
      );
      return EXIT.unavailable;
    }
    io.out(
      a.json
        ? `${JSON.stringify({ controlPlaneId: a.controlPlaneId, position: reply.position, ms: a.ms }, null, 2)}\n`
        : `read models of ${a.controlPlaneId} rebuilt from stream sequence 1 up to ${reply.position} in ${a.ms} ms\n`,
    );
    return EXIT.ok;
  },
};
