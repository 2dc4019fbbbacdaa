import { capacityRebuildCommand } from "./capacity-rebuild.ts";
import { compactCommand } from "./compact.ts";
import type { Command } from "./command.ts";
import { forensicsRebuildCommand } from "./forensics-rebuild.ts";
import { replayCommand } from "./replay.ts";
import { setupCommand } from "./setup.ts";
import { stepCacheRebuildCommand } from "./step-cache-rebuild.ts";
import { whyCommand } from "./why.ts";

// proof.ts pulls in the whole proof scenario and server launchers: loaded only when asked for, so
// `drover replay` starts fast. It parses its own flags and prints its own usage (exit 2).
const proofCommand: Command = {
  name: "proof",
  summary: "the crash-recovery proof against the real services",
  // Every flag is in proof.ts PROOF_USAGE (printed on a usage error); `drover admin proof` is this command (cli/drover.ts).
  usage:
    "drover [admin] proof [--parallel P] [--transport http|grpc] [--host process|kubernetes] [--replicas R] [--nats-cluster 3 [--kill-nats-leader]] [--json] …",
  run: async (args) => (await import("./proof.ts")).proofCommand(args),
};

/** Every `drover` subcommand, in help order. A new command is one file here plus one line below. */
export const COMMANDS: readonly Command[] = [
  proofCommand,
  replayCommand,
  whyCommand,
  capacityRebuildCommand,
  forensicsRebuildCommand,
  stepCacheRebuildCommand,
  setupCommand,
  compactCommand,
];
