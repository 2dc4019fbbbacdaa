import { connect, errors, type NatsConnection } from "@nats-io/transport-node";
import { ControlPlaneId, decodeJson, ForensicsRebuildReply } from "../../contracts/index.ts";
import { controlSubject } from "../../platform/control-subject.ts";
import { DEFAULT_LAYOUT, taggedLayout } from "../../streams/index.ts";
import { parseCommandArgs } from "../lib/args.ts";
import { controlPlaneOfConfig } from "./capacity-rebuild.ts";
import { EXIT, UsageError, type Command } from "./command.ts";

const DEFAULT_TIMEOUT_MS = 300_000;

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
    const subject = controlSubject(layout, controlPlaneId, "forensics", "rebuild");
    const servers = values.nats ?? io.env.NATS_URL ?? "nats://127.0.0.1:4222";

    let nc: NatsConnection;
    try {
      nc = await connect({ servers, timeout: 5_000, maxReconnectAttempts: 1 });
    } catch (e) {
      throw new Error(`cannot reach NATS at ${servers}: ${(e as Error).message}`, { cause: e });
    }
    try {
      const started = Date.now();
      const msg = await nc.request(subject, "", { timeout: timeoutMs }).catch((e: unknown) => {
        const none = e instanceof errors.RequestError && e.isNoResponders();
        throw new Error(
          none || e instanceof errors.TimeoutError
            ? `no forensics service answered on ${subject} within ${timeoutMs} ms${none ? " (nobody subscribes to it)" : ""}: is the forensics service of control plane ${controlPlaneId} running on ${servers}?`
            : `request on ${subject} failed: ${(e as Error).message}`,
          { cause: e },
        );
      });
      const reply = decodeJson(ForensicsRebuildReply, msg.data, "forensics rebuild reply", { subject });
      if (!reply.ok) {
        io.err(
          `drover forensics-rebuild: the forensics service of ${controlPlaneId} failed to rebuild: ${reply.error}\n`,
        );
        return EXIT.unavailable;
      }
      const ms = Date.now() - started;
      io.out(
        values.json
          ? `${JSON.stringify({ controlPlaneId, position: reply.position, ms }, null, 2)}\n`
          : `read models of ${controlPlaneId} rebuilt from stream sequence 1 up to ${reply.position} in ${ms} ms\n`,
      );
      return EXIT.ok;
    } finally {
      await nc.close();
    }
  },
};
