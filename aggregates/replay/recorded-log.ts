import type { DagDefinition, DroverEvent } from "../../contracts/index.ts";
import type { SequencedEvent } from "../execution.ts";
import { validateExecution } from "./execution-invariants.ts";
import { validateIncident } from "./incident-invariants.ts";
import { diverged, firstDivergence, match, type ValidationResult } from "./result.ts";
import { validateRun } from "./run-invariants.ts";

/** One stored event as a recorded log line holds it (test/fixtures/*.jsonl, or read from the stream). */
export interface RecordedEvent extends SequencedEvent {
  readonly subject: string;
}

/**
 * The aggregate id in an event subject: `<prefix>.<aggregate>.<tenant>.<id>.<event>` or
 * `<prefix>.runtime.<id>.<event>`. Counted from the end, so any (dotted) prefix works; the event's
 * own type says which form it is.
 */
export function aggregateIdOf(r: Pick<RecordedEvent, "subject" | "event">): string {
  const t = r.subject.split(".");
  return t[t.length - 2] ?? "";
}

/** Each log's events by `<aggregate>:<id>`, built once per log (and again if it grew). */
const indexes = new WeakMap<
  readonly RecordedEvent[],
  { readonly length: number; readonly byId: Map<string, RecordedEvent[]> }
>();

/**
 * The events of one aggregate, in log order. Indexed: validating a run looks its aggregates up
 * about ten times, and filtering the whole log each time made a P=15 proof's log assertions
 * (135 runs, 30 incidents, 12 000 events) take 11-20 s.
 */
const ofAggregate = (log: readonly RecordedEvent[], aggregate: string, id: string): RecordedEvent[] => {
  let index = indexes.get(log);
  if (index?.length !== log.length) {
    const byId = new Map<string, RecordedEvent[]>();
    for (const r of log) {
      const k = `${r.event.type.slice(0, r.event.type.indexOf("."))}:${aggregateIdOf(r)}`;
      const list = byId.get(k);
      if (list) list.push(r);
      else byId.set(k, [r]);
    }
    index = { length: log.length, byId };
    indexes.set(log, index);
  }
  return [...(index.byId.get(`${aggregate}:${id}`) ?? [])];
};

const submittedOf = (log: readonly RecordedEvent[], sharedRunId: string) =>
  ofAggregate(log, "run", sharedRunId)
    .map((r) => r.event)
    .find((e): e is Extract<DroverEvent, { type: "run.submitted" }> => e.type === "run.submitted");

/** The DAG of a run, from its `submitted` event. */
export const dagOf = (log: readonly RecordedEvent[], sharedRunId: string): DagDefinition | undefined =>
  submittedOf(log, sharedRunId)?.data.dag;

export interface LogOptions {
  /** sha256 hex, for the DAG digest and output re-derivation (see ExecutionReplay.digest). */
  readonly digest?: (s: string) => string;
  /** Texts of object-store outputs by object name (collect names with `storedOutputNames`). */
  readonly storedOutputs?: ReadonlyMap<string, string>;
}

/** Every object-store output a log's journals reference, so a shell can read them before validating. */
export function storedOutputNames(log: readonly RecordedEvent[]): { bucket: string; name: string }[] {
  const out: { bucket: string; name: string }[] = [];
  for (const r of log) {
    if (r.event.type !== "exec.step-completed") continue;
    const ref = r.event.data.outputRef;
    if (ref) out.push({ bucket: ref.bucket, name: ref.name });
  }
  return out;
}

/**
 * Validates one execution found in `log`: its journal against the DAG of the run named by its
 * `exec.started`. A journal whose run's `submitted` is not in the log diverges at its first event
 * (nothing to check it against).
 */
export function validateExecutionLog(
  executionId: string,
  log: readonly RecordedEvent[],
  opts: LogOptions = {},
): ValidationResult {
  const journal = ofAggregate(log, "exec", executionId);
  const started = journal.find((r) => r.event.type === "exec.started")?.event as
    Extract<DroverEvent, { type: "exec.started" }> | undefined;
  const submitted = started ? submittedOf(log, started.data.sharedRunId) : undefined;
  const dag = submitted?.data.dag;
  const first = journal[0];
  if (!first) return match(`execution ${executionId}`, 0, [`no journal for ${executionId}`]);
  if (!dag) {
    return diverged(`execution ${executionId}`, 0, {
      invariant: "exec-not-started",
      seq: first.seq,
      message: started
        ? `the DAG of run ${started.data.sharedRunId} (its run.submitted) is not in the log`
        : `journal starts with ${first.event.type} at seq ${first.seq}, not exec.started`,
    });
  }
  return validateExecution({
    executionId,
    journal,
    dag,
    ...(opts.digest ? { digest: opts.digest } : {}),
    ...(opts.storedOutputs ? { storedOutputs: opts.storedOutputs } : {}),
    ...(submitted ? { input: { value: submitted.data.input ?? null } } : {}),
  });
}

const tenantOf = (log: readonly RecordedEvent[], sharedRunId: string): string | undefined =>
  ofAggregate(log, "run", sharedRunId)[0]?.event.tenantId;

/** Every incident that moved this run: named by its requeue events. */
export const incidentsOfRun = (log: readonly RecordedEvent[], sharedRunId: string): string[] => [
  ...new Set(
    ofAggregate(log, "run", sharedRunId).flatMap((r) =>
      r.event.type === "run.requeued-for-resume" || r.event.type === "run.requeued-for-local-queued-recovery"
        ? [r.event.data.incidentId as string]
        : [],
    ),
  ),
];

/** Every execution the run started (resume keeps one; a redispatch adds one). */
export const executionsOfRun = (log: readonly RecordedEvent[], sharedRunId: string): string[] => [
  ...new Set(
    ofAggregate(log, "run", sharedRunId).flatMap((r) =>
      r.event.type === "run.started" ? [r.event.data.executionId as string] : [],
    ),
  ),
];

/**
 * Validates a run as the stream recorded it: the run aggregate, each of its executions and each
 * incident that moved it. `log` must hold those aggregates and, for incidents, every event from the
 * incident's `suspected` on. Incidents are judged within the run's tenant (see validateIncident). Returns `match` or the divergence with the lowest stream sequence.
 */
export function validateRunLog(
  sharedRunId: string,
  log: readonly RecordedEvent[],
  opts: LogOptions = {},
): ValidationResult {
  return firstDivergence(`run ${sharedRunId}`, [
    ...runParts(sharedRunId, log, opts),
    ...incidentsOfRun(log, sharedRunId).map((i) => validateIncident(i, log, tenantOf(log, sharedRunId))),
  ]);
}

/** The run aggregate and each of its executions (executions first: on a tie, the more specific report wins). */
const runParts = (sharedRunId: string, log: readonly RecordedEvent[], opts: LogOptions): ValidationResult[] => [
  ...executionsOfRun(log, sharedRunId).map((x) => validateExecutionLog(x, log, opts)),
  validateRun(sharedRunId, ofAggregate(log, "run", sharedRunId)),
];

/** Validates an incident and every run it moved (see validateRunLog and validateIncident). */
export function validateIncidentLog(
  incidentId: string,
  log: readonly RecordedEvent[],
  opts: LogOptions = {},
): ValidationResult {
  const runs = new Set<string>();
  for (const r of log) {
    if (
      (r.event.type === "run.requeued-for-resume" || r.event.type === "run.requeued-for-local-queued-recovery") &&
      r.event.data.incidentId === incidentId
    )
      runs.add(aggregateIdOf(r));
  }
  return firstDivergence(`incident ${incidentId}`, [
    validateIncident(incidentId, log),
    ...[...runs].flatMap((id) => runParts(id, log, opts)),
  ]);
}
