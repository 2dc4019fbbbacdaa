import { parseArgs } from "node:util";
import { UsageError } from "../commands/command.ts";

/** node:util parseArgs with every parse failure turned into a UsageError (exit 2). */
export function parseCommandArgs<T extends NonNullable<Parameters<typeof parseArgs>[0]>["options"]>(
  args: readonly string[],
  options: T,
) {
  try {
    return parseArgs({ args: [...args], options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}
