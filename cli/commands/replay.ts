import { createHash } from "node:crypto";
import {
  validateExecutionLog,
  validateIncidentLog,
  validateRunLog,
  type RecordedEvent,
  type ValidationResult,
} from "../../aggregates/replay-validation.ts";
import { assertNever } from "../../contracts/assert-never.ts";
import { ID_PATTERN } from "../../contracts/index.ts";
import { archiveStreamOf } from "../../platform/archive-store.ts";
import { parseCommandArgs } from "../lib/args.ts";
import { causalChain, formatChain, formatResult } from "../lib/causal-chain.ts";
import { gatherExecution, gatherIncident, gatherRun } from "../lib/gather.ts";
import { openStreamSource, type StreamSource } from "../lib/stream-source.ts";
import { EXIT, UsageError, type Command } from "./command.ts";

const KINDS = ["run", "execution", "incident"] as const;
type Kind = (typeof KINDS)[number];
const digest = (s: string) => createHash("sha256").update(s).digest("hex");

/**
 * `drover replay <run|execution|incident> <id> [--tenant T] [--json]`: reconstructs the causal
 * chain straight from the stream and replay-validates it (recovery.md "Replay validation").
 * Exit 0 on match, 1 on a divergence (printed with its stream sequence), 2 on bad arguments or an
 * id with no events, 3 when the stream cannot be read.
 */
export const replayCommand: Command = {
  name: "replay",
  summary: "causal chain of a run, execution or incident from the stream, and its replay validation",
  usage: "drover replay <run|execution|incident> <id> [--tenant T] [--json]",
  async run(args, io) {
    const { values, positionals } = parseCommandArgs(args, { tenant: { type: "string" }, json: { type: "boolean" } });
    const [kind, id, ...extra] = positionals;
    if (!KINDS.includes(kind as Kind))
      throw new UsageError(`expected one of ${KINDS.join("|")}, got ${JSON.stringify(kind ?? "")}`);
    if (!id || extra.length > 0)
      throw new UsageError(id ? `unexpected arguments: ${extra.join(" ")}` : `missing the ${kind} id`);
    // Ids become subject tokens: a wildcard or a dot would read other aggregates' events.
    for (const [what, v] of [
      [`${kind} id`, id],
      ["tenant", values.tenant],
    ] as const) {
      if (v !== undefined && !ID_PATTERN.test(v))
        throw new UsageError(`${what} ${JSON.stringify(v)} is not a drover id (lowercase [a-z0-9-])`);
    }
    const src = await openStreamSource(io.env);
    try {
      const { log, result } = await replayOf(src, kind as Kind, id, values.tenant);
      if (values.json)
        io.out(`${JSON.stringify({ kind, id, chain: causalChain(log), validation: result }, null, 2)}\n`);
      else io.out(`${formatChain(causalChain(log))}\n${formatResult(result)}`);
      const archived = src.fromArchive();
      // A compacted run replays from the archive (docs/retention.md): said, not hidden.
      if (archived > 0)
        io.err(
          `note: ${kind} ${id} was compacted: ${archived} of its events were read from the archive ${archiveStreamOf(src.layout)}\n`,
        );
      return result.kind === "match" ? EXIT.ok : EXIT.divergence;
    } finally {
      await src.close();
    }
  },
};

async function replayOf(
  src: StreamSource,
  kind: Kind,
  id: string,
  tenant?: string,
): Promise<{ log: RecordedEvent[]; result: ValidationResult }> {
  switch (kind) {
    case "run": {
      const { log } = await gatherRun(src, id, tenant);
      return { log, result: validateRunLog(id, log, { digest }) };
    }
    case "execution": {
      const { log } = await gatherExecution(src, id, tenant);
      return { log, result: validateExecutionLog(id, log, { digest }) };
    }
    case "incident": {
      if (tenant)
        throw new UsageError(
          "an incident spans tenants: replay incident is an operator view without --tenant (use replay run for one tenant's view)",
        );
      const log = await gatherIncident(src, id);
      return { log, result: validateIncidentLog(id, log, { digest }) };
    }
    default:
      return assertNever(kind);
  }
}
