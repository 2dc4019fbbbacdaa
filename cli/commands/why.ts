import { foldExecution } from "../../aggregates/execution.ts";
import { aggregateIdOf, type RecordedEvent } from "../../aggregates/replay-validation.ts";
import { foldRun } from "../../aggregates/run.ts";
import { ID_PATTERN } from "../../contracts/index.ts";
import { parseCommandArgs } from "../lib/args.ts";
import { describeEvent } from "../lib/describe-event.ts";
import { gatherRun } from "../lib/gather.ts";
import { openStreamSource } from "../lib/stream-source.ts";
import { EXIT, UsageError, type Command } from "./command.ts";

/**
 * `drover why <run> [--tenant T] [--json]`: why a run is where it is — its status and the event
 * that put it there, its last reason, whether it waits in the global queue and why, its placement,
 * its execution's progress, a pending recovery, and the state of every scale-out request it made.
 * Exit 0, 2 on bad arguments or an unknown run, 3 when the stream cannot be read.
 */
export const whyCommand: Command = {
  name: "why",
  summary: "why a run is where it is: status, last reason, global queue, placement, scale-out requests",
  usage: "drover why <run> [--tenant T] [--json]",
  async run(args, io) {
    const { values, positionals } = parseCommandArgs(args, { tenant: { type: "string" }, json: { type: "boolean" } });
    const [id, ...extra] = positionals;
    if (!id || extra.length > 0)
      throw new UsageError(id ? `unexpected arguments: ${extra.join(" ")}` : "missing the run id");
    for (const v of [id, values.tenant])
      if (v !== undefined && !ID_PATTERN.test(v))
        throw new UsageError(`${JSON.stringify(v)} is not a drover id (lowercase [a-z0-9-])`);
    const src = await openStreamSource(io.env);
    try {
      const { log } = await gatherRun(src, id, values.tenant);
      const facts = whyFacts(id, log);
      io.out(
        values.json
          ? `${JSON.stringify(facts, null, 2)}\n`
          : `${Object.entries(facts)
              .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
              .join("\n")}\n`,
      );
      return EXIT.ok;
    } finally {
      await src.close();
    }
  },
};

/** The explanation, from the run's gathered log (pure). */
export function whyFacts(sharedRunId: string, log: readonly RecordedEvent[]): Record<string, unknown> {
  const runLog = log.filter((r) => r.event.type.startsWith("run.") && aggregateIdOf(r) === sharedRunId);
  const run = foldRun(runLog);
  const last = runLog.at(-1);
  const lastQueued = [...runLog].reverse().find((r) => r.event.type === "run.queued-globally");
  const facts: Record<string, unknown> = {
    run: `${sharedRunId} (tenant ${run.tenantId ?? "?"})`,
    status: last ? `${run.status} since seq ${last.seq}: ${describeEvent(last.event)[1]}` : run.status,
  };
  if (run.lastReason) facts["last reason"] = run.lastReason;
  if (run.status === "queued" && lastQueued)
    facts["queued globally"] = `seq ${lastQueued.seq}: ${describeEvent(lastQueued.event)[1]}`;
  if (run.placement)
    facts.placement = `${run.placement.localRunId} on ${run.placement.runtimeInstanceId}${run.placement.dispatchedSeq ? ` (dispatched at seq ${run.placement.dispatchedSeq})` : " (admitted, not dispatched)"}`;
  if (run.resume)
    facts["pending recovery"] =
      `resume ${run.resume.executionId} at epoch ${run.resume.epoch} (${run.resume.forensicsId})`;
  else if (run.recoveryPending) facts["pending recovery"] = "redispatch of never-started work under a new LocalRunId";
  if (run.executionId) {
    const exec = foldExecution(
      log.filter((r) => r.event.type.startsWith("exec.") && aggregateIdOf(r) === run.executionId),
    );
    facts.execution = `${run.executionId}: ${exec.completed.size}/${run.dag?.steps.length ?? "?"} steps completed, epoch ${exec.epoch}${exec.terminal ? `, ${exec.terminal}` : ""}`;
  }
  const requests = run.scaleOutRequestIds.map((rid) => {
    const events = log.filter((r) => r.event.type.startsWith("scaleout.") && aggregateIdOf(r) === rid);
    const latest = events.at(-1);
    return latest
      ? `${rid}: ${latest.event.type.slice("scaleout.".length)} at seq ${latest.seq} — ${describeEvent(latest.event)[1]}`
      : `${rid}: not recorded`;
  });
  if (requests.length > 0) facts["scale-out requests"] = requests;
  return facts;
}
