import { aggregateIdOf, type RecordedEvent } from "../../aggregates/replay-validation.ts";
import { UsageError } from "../commands/command.ts";
import { mergeLogs, type StreamSource } from "./stream-source.ts";

/** Recovery facts (of the runtimes that hosted a run) that belong in its causal chain. */
const RUNTIME_FACTS = new Set([
  "runtime.host-exited",
  "runtime.suspected",
  "runtime.fenced",
  "runtime.fence-failed",
  "runtime.recovery-planned",
]);

/** The one tenant an id was found under; an id found under several needs --tenant. */
function tenantOf(kind: string, id: string, log: readonly RecordedEvent[]): string {
  const tenants = [...new Set(log.map((r) => r.event.tenantId ?? ""))];
  if (tenants.length > 1)
    throw new UsageError(`${kind} ${id} exists under tenants ${tenants.join(", ")}: pass --tenant`);
  return tenants[0] ?? "";
}

/**
 * Everything the stream holds about one run, read by subject: the run aggregate, its executions,
 * scale-out requests and forensics records, the recovery facts of the runtimes it was placed on,
 * and — when an incident moved it — every event of its tenant (and runtime events) from the
 * incident's `suspected` on, so writes after the fence can be judged. Throws UsageError when the
 * run has no events.
 */
export async function gatherRun(
  src: StreamSource,
  sharedRunId: string,
  tenant?: string,
): Promise<{ tenantId: string; log: RecordedEvent[] }> {
  const p = src.layout.eventPrefix;
  const run = await src.collect(`${p}.run.${tenant ?? "*"}.${sharedRunId}.>`);
  if (run.length === 0) throw new UsageError(`no events for run ${sharedRunId}${tenant ? ` of tenant ${tenant}` : ""}`);
  const t = tenantOf("run", sharedRunId, run);
  const ids = (pick: (d: Record<string, unknown>, type: string) => unknown) => [
    ...new Set(
      run.flatMap((r) => {
        const v = pick(r.event.data as Record<string, unknown>, r.event.type);
        return typeof v === "string" ? [v] : [];
      }),
    ),
  ];
  const filters = [
    ...ids((d, ty) => (ty === "run.started" ? d.executionId : undefined)).map((x) => `${p}.exec.${t}.${x}.>`),
    ...ids((d, ty) => (ty === "run.scale-out-requested" ? d.requestId : undefined)).map(
      (x) => `${p}.scaleout.${t}.${x}.>`,
    ),
    ...ids((d) => d.forensicsId).map((x) => `${p}.forensics.${t}.${x}.>`),
    ...ids((d, ty) => (ty === "run.admitted" ? d.runtimeInstanceId : undefined)).map((x) => `${p}.runtime.${x}.>`),
  ];
  const related = (await src.collect(filters)).filter(
    (r) => !r.event.type.startsWith("runtime.") || RUNTIME_FACTS.has(r.event.type),
  );
  const incidents = new Set(ids((d, ty) => (ty.startsWith("run.requeued-") ? d.incidentId : undefined)));
  const suspected = related.filter(
    (r) => r.event.type === "runtime.suspected" && incidents.has((r.event.data as { incidentId: string }).incidentId),
  );
  const from = Math.min(...suspected.map((r) => r.seq));
  // One filter over everything: a tenant filter and a runtime filter may overlap, which a consumer refuses.
  const tail = Number.isFinite(from)
    ? (await src.collect(`${p}.>`, from)).filter((r) => r.event.tenantId === t || r.event.type.startsWith("runtime."))
    : [];
  return { tenantId: t, log: mergeLogs(run, related, tail) };
}

/** The run that owns an execution, gathered as gatherRun does; UsageError when the journal is empty. */
export async function gatherExecution(
  src: StreamSource,
  executionId: string,
  tenant?: string,
): Promise<{ sharedRunId: string; log: RecordedEvent[] }> {
  const journal = await src.collect(`${src.layout.eventPrefix}.exec.${tenant ?? "*"}.${executionId}.>`);
  if (journal.length === 0)
    throw new UsageError(`no journal for execution ${executionId}${tenant ? ` of tenant ${tenant}` : ""}`);
  const t = tenantOf("execution", executionId, journal);
  const started = journal.find((r) => r.event.type === "exec.started");
  if (!started) return { sharedRunId: "", log: journal };
  const sharedRunId = (started.event.data as { sharedRunId: string }).sharedRunId;
  const { log } = await gatherRun(src, sharedRunId, t);
  return { sharedRunId, log: mergeLogs(log, journal) };
}

/**
 * An incident across tenants (an operator view): the failed runtime's events, every event from its
 * `suspected` on, and the full history of every run it moved. UsageError when no runtime was
 * suspected under that incident id.
 */
export async function gatherIncident(src: StreamSource, incidentId: string): Promise<RecordedEvent[]> {
  const p = src.layout.eventPrefix;
  const suspected = (await src.collect(`${p}.runtime.*.suspected`)).find(
    (r) => (r.event.data as { incidentId: string }).incidentId === incidentId,
  );
  if (!suspected) throw new UsageError(`no runtime was suspected under incident ${incidentId}`);
  const runtime = await src.collect(`${p}.runtime.${aggregateIdOf(suspected)}.>`);
  const tail = await src.collect(`${p}.>`, suspected.seq);
  const moved = tail.filter(
    (r) =>
      r.event.type.startsWith("run.requeued-") && (r.event.data as { incidentId: string }).incidentId === incidentId,
  );
  const runs = await Promise.all(moved.map((r) => gatherRun(src, aggregateIdOf(r), r.event.tenantId)));
  return mergeLogs(runtime, tail, ...runs.map((r) => r.log));
}
