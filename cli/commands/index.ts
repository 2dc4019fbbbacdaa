import type { Command } from "./command.ts";

/**
 * A command whose module (and the packages it imports: NATS, MongoDB, zod contracts…) is loaded only
 * when it runs: `drover --help`, `drover runs …` and a command's `--help` load none of them. The name,
 * summary and usage are the module's own, repeated here (a unit test holds them equal).
 */
function lazy(meta: Omit<Command, "run">, load: () => Promise<Command>): Command {
  return { ...meta, run: async (args, io) => (await load()).run(args, io) };
}

// proof.ts parses its own flags and prints its own usage (exit 2): its summary and usage live only here.
const proofCommand: Command = {
  name: "proof",
  summary: "the crash-recovery proof against the real services",
  // Every flag is in proof.ts PROOF_USAGE (printed on a usage error); `drover admin proof` is this command (cli/drover.ts).
  usage:
    "drover [admin] proof [--parallel P] [--transport http|grpc] [--host process|kubernetes] [--replicas R] [--nats-cluster 3 [--kill-nats-leader]] [--json] …",
  run: async (args) => (await import("./proof.ts")).proofCommand(args),
};

/** Every `drover` subcommand, in help order. A new command is one file plus one entry below. */
export const COMMANDS: readonly Command[] = [
  proofCommand,
  lazy(
    {
      name: "replay",
      summary: "causal chain of a run, execution or incident from the stream, and its replay validation",
      usage: "drover replay <run|execution|incident> <id> [--tenant T] [--json]",
    },
    async () => (await import("./replay.ts")).replayCommand,
  ),
  lazy(
    {
      name: "why",
      summary: "why a run is where it is: status, last reason, global queue, placement, scale-out requests",
      usage: "drover why <run> [--tenant T] [--json]",
    },
    async () => (await import("./why.ts")).whyCommand,
  ),
  lazy(
    {
      name: "capacity-rebuild",
      summary: "rebuild a control plane's Redis capacity view from stream sequence 1 and print what it holds",
      usage: "drover capacity-rebuild [--control-plane ID] [--nats URL] [--timeout-ms N] [--json]",
    },
    async () => (await import("./capacity-rebuild.ts")).capacityRebuildCommand,
  ),
  lazy(
    {
      name: "forensics-rebuild",
      summary: "rebuild a control plane's MongoDB read models from stream sequence 1",
      usage: "drover forensics-rebuild [--control-plane ID] [--nats URL] [--timeout-ms N] [--json]",
    },
    async () => (await import("./forensics-rebuild.ts")).forensicsRebuildCommand,
  ),
  lazy(
    {
      name: "step-cache-rebuild",
      summary: "rebuild a tenant's step cache index from its journals",
      usage: "drover step-cache-rebuild --tenant T [--json]",
    },
    async () => (await import("./step-cache-rebuild.ts")).stepCacheRebuildCommand,
  ),
  lazy(
    {
      name: "setup",
      summary: "create or verify drover's streams, durable consumer and outputs stream (as the setup identity)",
      usage: "drover admin setup [--nats URL]   (NATS_CREDS: the setup identity; DROVER_STREAM_TAG: a tagged layout)",
    },
    async () => (await import("./setup.ts")).setupCommand,
  ),
  lazy(
    {
      name: "compact",
      summary: "archive, then remove from the stream, finished runs past the retention window (as the compactor)",
      usage:
        "drover admin compact [--retention 30d] [--tenant T] [--run R] [--dry-run]   (NATS_CREDS: the compactor identity; MONGO_URL)",
    },
    async () => (await import("./compact.ts")).compactCommand,
  ),
];
