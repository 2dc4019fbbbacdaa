/**
 * The contract every `drover` subcommand implements: one file per command under cli/commands/,
 * registered in cli/commands/index.ts. A command parses its own arguments, writes to the given
 * streams (never to process.stdout directly, so tests can run it in-process) and returns its exit code.
 */
export interface Command {
  readonly name: string;
  /** One line for `drover help`. */
  readonly summary: string;
  /** Usage lines, printed with a usage error. */
  readonly usage: string;
  run(args: readonly string[], io: CommandIo): Promise<number>;
}

export interface CommandIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** Exit codes shared by every command (documented in `drover help`). */
export const EXIT = { ok: 0, divergence: 1, usage: 2, unavailable: 3 } as const;

/** Bad arguments, or an id that names nothing: the caller must change the command line (exit 2). */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
