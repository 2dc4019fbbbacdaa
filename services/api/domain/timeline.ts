import type { Detail, ExecutionDoc, LedgerEntry, Refs, RunDoc } from "../../../contracts/read-models.ts";
import type { TenantIncident } from "./forensics-view.ts";

/** The stages of a run's causal chain, in the order recovery.md names them. */
export type Phase =
  "submission" | "admission" | "dispatch" | "execution" | "steps" | "failure" | "fence" | "recovery" | "completion";

/** One link of the chain: an event (or a summary of an execution's steps) at its stream sequence. */
export interface ChainEntry extends Refs {
  readonly seq: number;
  readonly at: string;
  readonly phase: Phase;
  readonly type: string;
  readonly summary: string;
  readonly detail: Detail;
}

export interface RunTimeline {
  readonly sharedRunId: string;
  readonly tenantId: string;
  readonly status: string;
  readonly dagName?: string;
  readonly stepCount: number;
  readonly chain: readonly ChainEntry[];
  readonly executions: readonly ExecutionSummary[];
  readonly incidents: readonly TenantIncident[];
}

/** An execution with its step progress, counted from its step rows: a step completed twice is a duplicate, never progress. */
export type ExecutionSummary = Omit<ExecutionDoc, "_id" | "tenantId"> & {
  readonly completedSteps: number;
  readonly duplicateCompletions: number;
  readonly failedAttempts: number;
};

function summarize(x: ExecutionDoc, rows: readonly LedgerEntry[]): ExecutionSummary {
  const { _id: _ignored, tenantId: _tenant, ...rest } = x;
  const mine = rows.filter((r) => r.aggregateId === x.executionId && isStepEvent(r.type));
  const completions = mine.filter((r) => r.type === "exec.step-completed").map((r) => String(r.detail.stepId));
  const distinct = new Set(completions).size;
  return {
    ...rest,
    completedSteps: distinct,
    duplicateCompletions: completions.length - distinct,
    failedAttempts: mine.length - completions.length,
  };
}

const PHASES: Readonly<Record<string, Phase>> = {
  "run.submitted": "submission",
  "run.admitted": "admission",
  "run.queued-globally": "admission",
  "run.scale-out-requested": "admission",
  "run.rejected": "admission",
  "run.dispatched": "dispatch",
  "run.dispatch-failed": "dispatch",
  "run.started": "execution",
  "exec.started": "execution",
  "exec.resumed": "recovery",
  "run.requeued-for-resume": "recovery",
  "run.requeued-for-local-queued-recovery": "recovery",
  "run.replacement-selected": "recovery",
  "exec.paused-for-recovery": "recovery",
  "run.completed": "completion",
  "run.failed": "completion",
  "run.cancel-requested": "completion",
  "run.cancelled": "completion",
  "exec.completed": "completion",
  "exec.failed": "completion",
  "exec.cancelled": "completion",
};

const phaseOf = (type: string): Phase => PHASES[type] ?? (type.startsWith("forensics.") ? "recovery" : "execution");
const isStepEvent = (type: string) => type === "exec.step-completed" || type === "exec.step-failed";

/**
 * The run's causal chain from the read models: submission → admission decisions (with their
 * candidates) → dispatch → execution → steps (one entry per uninterrupted stretch of step events)
 * → the runtime failure and fence of every incident that took the run's work → recovery
 * (requeue, pause, forensics timeline, resume) → completion. Entries are in stream order.
 * `incidents` must already be scoped to the run's tenant. Pure.
 */
export function runTimeline(
  run: RunDoc,
  executions: readonly ExecutionDoc[],
  rows: readonly LedgerEntry[],
  incidents: readonly TenantIncident[],
): RunTimeline {
  const links: (ChainEntry | LedgerEntry)[] = [
    ...rows.filter((r) => isStepEvent(r.type)),
    ...rows.filter((r) => !isStepEvent(r.type)).map((r) => entry(r, phaseOf(r.type))),
  ];
  for (const i of incidents) links.push(...incidentEntries(i));
  links.sort((a, b) => a.seq - b.seq);
  return {
    sharedRunId: run.sharedRunId,
    tenantId: run.tenantId,
    status: run.status,
    ...(run.dagName ? { dagName: run.dagName } : {}),
    stepCount: run.stepCount,
    chain: collapseSteps(links),
    executions: executions.map((x) => summarize(x, rows)),
    incidents,
  };
}

/**
 * Each uninterrupted stretch of step events becomes one "steps" entry at its last event: the
 * chain stays readable for long DAGs, and steps before and after a failure stay apart. A step
 * completed a second time in the same execution is called out as a duplicate, never merged away.
 */
function collapseSteps(links: readonly (ChainEntry | LedgerEntry)[]): ChainEntry[] {
  const out: ChainEntry[] = [];
  const done = new Set<string>();
  let stretch: LedgerEntry[] = [];
  const flush = () => {
    const last = stretch.at(-1);
    if (!last) return;
    const completed = stretch.filter((r) => r.type === "exec.step-completed").map((r) => String(r.detail.stepId));
    const duplicates = completed.filter(
      (id, i) => done.has(`${last.aggregateId}/${id}`) || completed.indexOf(id) !== i,
    ).length;
    for (const id of completed) done.add(`${last.aggregateId}/${id}`);
    const failed = stretch.length - completed.length;
    const noun = completed.length === 1 ? "step" : "steps";
    out.push({
      ...entry(last, "steps"),
      type: "exec.steps",
      summary: `${completed.length} ${noun} completed (${completed.join(", ")}), ${failed} failed attempts${duplicates > 0 ? `, ${duplicates} DUPLICATE completions` : ""}`,
      detail: {
        completed: completed.length,
        stepIds: completed.join(","),
        failedAttempts: failed,
        duplicates,
        epoch: last.detail.epoch ?? null,
      },
    });
    stretch = [];
  };
  for (const l of links) {
    if ("aggregateId" in l && isStepEvent(l.type)) {
      stretch.push(l);
      continue;
    }
    flush();
    out.push(l as ChainEntry);
  }
  flush();
  return out;
}

/** The runtime failure facts of an incident as chain links (already scoped to the tenant). */
function incidentEntries(i: TenantIncident): ChainEntry[] {
  const refs = { incidentId: i.incidentId, runtimeInstanceId: i.runtimeInstanceId };
  const out: ChainEntry[] = [];
  if (i.suspected)
    out.push({
      ...refs,
      seq: i.suspected.seq,
      at: i.suspected.at,
      phase: "failure",
      type: "runtime.suspected",
      summary: `runtime ${i.runtimeInstanceId} suspected: ${i.suspected.reasonCode}`,
      detail: { reasonCode: i.suspected.reasonCode, reasonDetail: i.suspected.reasonDetail },
    });
  for (const ff of i.fenceFailures)
    out.push({
      ...refs,
      seq: ff.seq,
      at: ff.at,
      phase: "fence",
      type: "runtime.fence-failed",
      summary: `fence not proven (attempt ${ff.attempt}): ${ff.reasonCode}`,
      detail: { reasonCode: ff.reasonCode, reasonDetail: ff.reasonDetail, attempt: ff.attempt },
    });
  if (i.fenced)
    out.push({
      ...refs,
      seq: i.fenced.seq,
      at: i.fenced.at,
      phase: "fence",
      type: "runtime.fenced",
      summary: `runtime ${i.runtimeInstanceId} fenced: ${String(i.fenced.proof.kind)} of ${i.fenced.hostIncarnation}`,
      detail: { hostIncarnation: i.fenced.hostIncarnation, ...i.fenced.proof },
    });
  if (i.planned)
    out.push({
      ...refs,
      seq: i.planned.seq,
      at: i.planned.at,
      phase: "recovery",
      type: "runtime.recovery-planned",
      summary: `recovery planned for ${i.planned.itemCount} of your items`,
      detail: { itemCount: i.planned.itemCount },
    });
  return out;
}

function entry(r: LedgerEntry, phase: Phase): ChainEntry {
  const refs: Refs = {
    ...(r.sharedRunId ? { sharedRunId: r.sharedRunId } : {}),
    ...(r.executionId ? { executionId: r.executionId } : {}),
    ...(r.localRunId ? { localRunId: r.localRunId } : {}),
    ...(r.runtimeInstanceId ? { runtimeInstanceId: r.runtimeInstanceId } : {}),
    ...(r.incidentId ? { incidentId: r.incidentId } : {}),
    ...(r.forensicsId ? { forensicsId: r.forensicsId } : {}),
  };
  return { ...refs, seq: r.seq, at: r.at, phase, type: r.type, summary: r.summary, detail: r.detail };
}
