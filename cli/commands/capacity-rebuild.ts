import { connect, errors, type NatsConnection } from "@nats-io/transport-node";
import { CapacityRebuildReply, ControlPlaneId, decodeJson } from "../../contracts/index.ts";
import { controlSubject } from "../../platform/control-subject.ts";
import { DEFAULT_LAYOUT, taggedLayout } from "../../streams/index.ts";
import { parseCommandArgs } from "../lib/args.ts";
import { EXIT, UsageError, type Command } from "./command.ts";

const DEFAULT_TIMEOUT_MS = 30_000;

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
    const { values, positionals } = parseCommandArgs(args, {
      "control-plane": { type: "string" },
      nats: { type: "string" },
      "timeout-ms": { type: "string" },
      json: { type: "boolean" },
    });
    if (positionals.length > 0) throw new UsageError(`unexpected arguments: ${positionals.join(" ")}`);
    const timeoutMs = Number(values["timeout-ms"] ?? DEFAULT_TIMEOUT_MS);
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0)
      throw new UsageError(`--timeout-ms must be a positive integer, got ${JSON.stringify(values["timeout-ms"])}`);
    const controlPlaneId = values["control-plane"] ?? (await controlPlaneOfConfig(io.env.DROVER_CONFIG));
    if (!ControlPlaneId.safeParse(controlPlaneId).success)
      throw new UsageError(`${JSON.stringify(controlPlaneId)} is not a control plane id`);
    const layout = io.env.DROVER_STREAM_TAG ? taggedLayout(io.env.DROVER_STREAM_TAG) : DEFAULT_LAYOUT;
    const subject = controlSubject(layout, controlPlaneId, "capacity", "rebuild");
    const servers = values.nats ?? io.env.NATS_URL ?? "nats://127.0.0.1:4222";

    let nc: NatsConnection;
    try {
      nc = await connect({ servers, timeout: 5_000, maxReconnectAttempts: 1 });
    } catch (e) {
      throw new Error(`cannot reach NATS at ${servers}: ${(e as Error).message}`, { cause: e });
    }
    try {
      const msg = await nc.request(subject, "", { timeout: timeoutMs }).catch((e: unknown) => {
        const none = e instanceof errors.RequestError && e.isNoResponders();
        throw new Error(
          none || e instanceof errors.TimeoutError
            ? `no capacity service answered on ${subject} within ${timeoutMs} ms${none ? " (nobody subscribes to it)" : ""}: is the capacity service of control plane ${controlPlaneId} running on ${servers}${io.env.DROVER_STREAM_TAG ? ` with DROVER_STREAM_TAG=${io.env.DROVER_STREAM_TAG}` : ""}?`
            : `request on ${subject} failed: ${(e as Error).message}`,
          { cause: e },
        );
      });
      const reply = decodeJson(CapacityRebuildReply, msg.data, "capacity rebuild reply", { subject });
      if (!reply.ok) {
        io.err(
          `drover capacity-rebuild: the capacity service of ${controlPlaneId} failed to rebuild: ${reply.error}\n`,
        );
        return EXIT.unavailable;
      }
      io.out(
        values.json
          ? `${JSON.stringify({ controlPlaneId, ...reply }, null, 2)}\n`
          : [
              `capacity view of ${controlPlaneId} rebuilt from stream sequence 1 in ${reply.ms} ms`,
              `runtimes in the view: ${reply.runtimes.length}${reply.runtimes.length ? ` (${reply.runtimes.join(", ")})` : ""}`,
              `runtime events folded: ${reply.eventsFolded}, up to stream sequence ${reply.lastSeq}`,
              `heartbeats folded: ${reply.heartbeatsFolded}`,
              "",
            ].join("\n"),
      );
      return EXIT.ok;
    } finally {
      await nc.close();
    }
  },
};

export async function controlPlaneOfConfig(path: string | undefined): Promise<string> {
  // bootstrap.ts pulls in Redis and the logger: loaded only when the id must come from the config.
  const { loadConfig } = await import("../../platform/bootstrap.ts");
  try {
    return loadConfig(path).controlPlaneId;
  } catch (e) {
    throw new UsageError(`${(e as Error).message} (or pass --control-plane)`);
  }
}
