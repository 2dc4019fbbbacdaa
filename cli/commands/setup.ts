import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectNats } from "../../platform/nats-connect.ts";
import { setupNats } from "../../platform/nats-setup.ts";
import { DEFAULT_LAYOUT, taggedLayout } from "../../streams/index.ts";
import { eventCompactionFromEnv, streamLimitsFromEnv } from "../../streams/limits.ts";
import { parseCommandArgs } from "../lib/args.ts";
import { EXIT, UsageError, type Command } from "./command.ts";

/**
 * `drover admin setup [--nats URL]`: creates (or verifies) drover's streams, the provisioner's
 * durable consumer and the outputs stream, as the `setup` identity in NATS_CREDS — the only identity
 * allowed to (docs/nats-identities.md). Run once before the services start: `make run` does it
 * (scripts/nats-auth.ts setup), a cluster runs it as the Job of k8s/drover/25-setup-job.yaml.
 * Idempotent; a stream that exists with other settings is refused, never changed, except the limits
 * of the heartbeat and dead-letter streams, which it sets from DROVER_HEARTBEAT_* / DROVER_DLQ_*
 * (streams/limits.ts, docs/retention.md).
 * Exit 0 done, 2 bad arguments, 3 NATS unreachable or the server refused (e.g. not the setup identity).
 */
export const setupCommand: Command = {
  name: "setup",
  summary: "create or verify drover's streams, durable consumer and outputs stream (as the setup identity)",
  usage: "drover admin setup [--nats URL]   (NATS_CREDS: the setup identity; DROVER_STREAM_TAG: a tagged layout)",
  async run(args, io) {
    const { values, positionals } = parseCommandArgs(args, { nats: { type: "string" } });
    if (positionals.length > 0) throw new UsageError(`unexpected arguments: ${positionals.join(" ")}`);
    const layout = io.env.DROVER_STREAM_TAG ? taggedLayout(io.env.DROVER_STREAM_TAG) : DEFAULT_LAYOUT;
    const servers = values.nats ?? io.env.NATS_URL ?? "nats://127.0.0.1:4222";
    let limits, compactable;
    try {
      limits = streamLimitsFromEnv(io.env);
      compactable = eventCompactionFromEnv(io.env);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    let nc: NatsConnection;
    try {
      nc = await connectNats({ servers, creds: io.env.NATS_CREDS ?? "", timeout: 5_000, maxReconnectAttempts: 1 });
    } catch (e) {
      io.err(`drover setup: cannot reach NATS at ${servers}: ${(e as Error).message}\n`);
      return EXIT.unavailable;
    }
    try {
      await setupNats(await jetstreamManager(nc), layout, undefined, limits, compactable);
      io.out(`streams, durable consumer and outputs stream of ${layout.eventPrefix} are in place on ${servers}\n`);
      return EXIT.ok;
    } finally {
      await nc.close();
    }
  },
};
