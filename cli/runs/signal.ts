import { readFileSync } from "node:fs";
import type { Command } from "commander";
import type { CommandKit } from "./schedules.ts";

/** `--data` as JSON (inline, or `@file`). */
function dataOf(kit: CommandKit, raw: string): unknown {
  try {
    return JSON.parse(raw.startsWith("@") ? readFileSync(raw.slice(1), "utf8") : raw) as unknown;
  } catch (e) {
    return kit.fail(`--data is not JSON: ${(e as Error).message}`);
  }
}

/** `drover runs signal ID NAME --data JSON|@file [--signal-id ID]`: resolves the run's wait NAME (docs/control-flow.md "Waits"). */
export function addSignalCommand(runs: Command, kit: CommandKit): void {
  runs
    .command("signal")
    .description("resolve the run's wait NAME with a payload (the wait step's output)")
    .argument("<id>", "SharedRunId")
    .argument("<name>", "the wait's name (params.name)")
    .requiredOption("--data <json>", "the payload: JSON, or @file")
    .option("--signal-id <id>", "idempotency key: sending it again answers the first signal")
    .action(async (id: string, name: string, o: { data: string; signalId?: string }) => {
      const payload = dataOf(kit, o.data);
      const body = kit.ok(
        await kit.client().call("POST", `/v1/runs/${id}/signals/${encodeURIComponent(name)}`, {
          payload,
          ...(o.signalId === undefined ? {} : { signalId: o.signalId }),
        }),
      );
      kit.print(
        body,
        () =>
          `${id}  ${name}  ${body.outcome}  by ${body.signal.by}  step ${body.signal.stepId}  payload sha256 ${body.signal.payloadDigest}\n`,
      );
    });
}
