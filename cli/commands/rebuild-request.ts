import { errors, type NatsConnection } from "@nats-io/transport-node";
import { connectNats } from "../../platform/nats-connect.ts";
import { ControlPlaneId } from "../../contracts/index.ts";
import { controlSubject } from "../../platform/control-subject.ts";
import { DEFAULT_LAYOUT, taggedLayout } from "../../streams/index.ts";
import { parseCommandArgs } from "../lib/args.ts";
import { UsageError, type CommandIo } from "./command.ts";

/** What a rebuild request got back: the raw reply, for the command to decode and print. */
export interface RebuildAnswer {
  readonly controlPlaneId: string;
  readonly subject: string;
  readonly data: Uint8Array;
  readonly ms: number;
  readonly json: boolean;
}

/**
 * The shared half of `capacity-rebuild` and `forensics-rebuild`: parses `[--control-plane ID]
 * [--nats URL] [--timeout-ms N] [--json]` (the id from the flag or DROVER_CONFIG, NATS from the flag
 * or NATS_URL), sends the request on `drover-ctl.<cp>.<service>.rebuild` and waits for the reply.
 * Throws UsageError (exit 2) for bad arguments, Error (exit 3) when NATS or the service does not answer.
 */
export async function requestRebuild(
  service: "capacity" | "forensics",
  args: readonly string[],
  io: CommandIo,
  defaultTimeoutMs: number,
): Promise<RebuildAnswer> {
  const { values, positionals } = parseCommandArgs(args, {
    "control-plane": { type: "string" },
    nats: { type: "string" },
    "timeout-ms": { type: "string" },
    json: { type: "boolean" },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected arguments: ${positionals.join(" ")}`);
  const timeoutMs = Number(values["timeout-ms"] ?? defaultTimeoutMs);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0)
    throw new UsageError(`--timeout-ms must be a positive integer, got ${JSON.stringify(values["timeout-ms"])}`);
  const controlPlaneId = values["control-plane"] ?? (await controlPlaneOfConfig(io.env.DROVER_CONFIG));
  if (!ControlPlaneId.safeParse(controlPlaneId).success)
    throw new UsageError(`${JSON.stringify(controlPlaneId)} is not a control plane id`);
  const layout = io.env.DROVER_STREAM_TAG ? taggedLayout(io.env.DROVER_STREAM_TAG) : DEFAULT_LAYOUT;
  const subject = controlSubject(layout, controlPlaneId, service, "rebuild");
  const servers = values.nats ?? io.env.NATS_URL ?? "nats://127.0.0.1:4222";
  let nc: NatsConnection;
  try {
    nc = await connectNats({ servers, creds: io.env.NATS_CREDS ?? "", timeout: 5_000, maxReconnectAttempts: 1 });
  } catch (e) {
    throw new Error(`cannot reach NATS at ${servers}: ${(e as Error).message}`, { cause: e });
  }
  try {
    const started = Date.now();
    const msg = await nc.request(subject, "", { timeout: timeoutMs }).catch((e: unknown) => {
      const none = e instanceof errors.RequestError && e.isNoResponders();
      const tag = io.env.DROVER_STREAM_TAG ? ` with DROVER_STREAM_TAG=${io.env.DROVER_STREAM_TAG}` : "";
      throw new Error(
        none || e instanceof errors.TimeoutError
          ? `no ${service} service answered on ${subject} within ${timeoutMs} ms${none ? " (nobody subscribes to it)" : ""}: is the ${service} service of control plane ${controlPlaneId} running on ${servers}${tag}?`
          : `request on ${subject} failed: ${(e as Error).message}`,
        { cause: e },
      );
    });
    return { controlPlaneId, subject, data: msg.data, ms: Date.now() - started, json: values.json === true };
  } finally {
    await nc.close();
  }
}

export async function controlPlaneOfConfig(path: string | undefined): Promise<string> {
  // bootstrap.ts pulls in Redis and the logger: loaded only when the id must come from the config.
  const { loadConfig } = await import("../../platform/bootstrap.ts");
  try {
    return loadConfig(path).controlPlaneId;
  } catch (e) {
    throw new UsageError(`${(e as Error).message} (or pass --control-plane)`);
  }
}
