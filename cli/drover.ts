import { pathToFileURL } from "node:url";
import { EXIT, UsageError, type Command, type CommandIo } from "./commands/command.ts";
import { COMMANDS } from "./commands/index.ts";

/**
 * `drover <command> [args]`: operator tools that read the event stream directly (no read model
 * needed), or ask a control-plane service over NATS (`capacity-rebuild`). Run as
 * `node --import tsx cli/drover.ts …` or `npm run drover -- …`.
 *
 * Exit codes: 0 ok / match, 1 replay divergence, 2 usage error (bad arguments, unknown id),
 * 3 the stream could not be read, or no service answered a request.
 */
export async function main(
  argv: readonly string[],
  io: CommandIo,
  commands: readonly Command[] = COMMANDS,
): Promise<number> {
  const [first, ...afterFirst] = argv;
  if (first === "runs") return (await import("./runs/program.ts")).runsMain(afterFirst, io);
  if (first === "schedules" || first === "cache" || first === "runtimes" || first === "workers")
    return (await import("./runs/program.ts")).runsMain(argv, io);
  // The NATS-direct operator tools live under `drover admin …`; their old top-level names keep working.
  const [name, ...rest] = first === "admin" ? afterFirst : argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    io.out(help(commands));
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  const cmd = commands.find((c) => c.name === name);
  if (cmd && (rest.includes("--help") || rest.includes("-h"))) {
    io.out(`${cmd.summary}
usage: ${cmd.usage}
`);
    return EXIT.ok;
  }
  if (!cmd) {
    io.err(`drover: unknown command ${JSON.stringify(name)}\n\n${help(commands)}`);
    return EXIT.usage;
  }
  try {
    return await cmd.run(rest, io);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`drover ${cmd.name}: ${e.message}\nusage: ${cmd.usage}\n`);
      return EXIT.usage;
    }
    // Anything else is the stream or the network: not the operator's arguments, and not a divergence.
    io.err(`drover ${cmd.name}: ${(e as Error)?.message ?? String(e)}\n`);
    return EXIT.unavailable;
  }
}

function help(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    "usage: drover runs <command> [options]   tenant commands over the HTTP API (drover runs --help)",
    "       drover schedules <command> [opts] the tenant's schedules over the HTTP API (drover schedules --help)",
    "       drover cache list|clear [opts]    the tenant's step cache keys over the HTTP API (drover cache --help)",
    "       drover runtimes [opts]            operators: runtimes, worker versions, drain, pinned runs (HTTP API)",
    "       drover workers [deploy] [opts]    the tenant's deployed worker version; deploy it as configured (HTTP API)",
    "       drover admin <command> [args]     operator tools reading NATS directly (also without `admin`):",
    "",
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    "environment: NATS_URL (default nats://127.0.0.1:4222), DROVER_STREAM_TAG (a tagged test layout), DROVER_CONFIG (capacity-rebuild's control plane)",
    "exit codes: 0 ok/match, 1 replay divergence, 2 usage error or unknown id, 3 stream, service or API unavailable; runs: 1 the run did not complete, 4 no such run",
    "",
  ].join("\n");
}

/** Runs the CLI on this process's arguments and streams (the `bin` entry and `node cli/drover.ts` both call it). */
export async function cli(): Promise<void> {
  const io: CommandIo = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t), env: process.env };
  process.exitCode = await main(process.argv.slice(2), io);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await cli();
