import type { DroverEvent } from "../../../contracts/index.ts";
import type { ExecutionDoc, StepRow } from "../../../contracts/read-models.ts";
import { assertNever, positionOf, type Fact } from "./fact.ts";

type ExecEvent = Extract<DroverEvent, { type: `exec.${string}` }>;

/** The `executions` key, tenant first like `runs`. */
export const executionDocId = (tenantId: string, executionId: string): string => `${tenantId}:${executionId}`;

const empty = (tenantId: string, executionId: string, seq: number): ExecutionDoc => ({
  _id: executionDocId(tenantId, executionId), tenantId, executionId, status: "running", epoch: 0, owners: [], steps: [],
  completedSteps: 0, failedAttempts: 0, duplicateCompletions: 0, pauses: [], firstSeq: seq, lastSeq: 0,
});

function upsertStep(steps: readonly StepRow[], stepId: string, f: (prev: StepRow | undefined) => StepRow): StepRow[] {
  const i = steps.findIndex((s) => s.stepId === stepId);
  return i < 0 ? [...steps, f(undefined)] : steps.map((s, j) => (j === i ? f(s) : s));
}

/**
 * Folds one journal event into the execution's summary: owners by epoch, each step's outcome
 * (a second `step-completed` for a step is counted, never hidden: it is a duplicate to report),
 * pauses for recovery and the end. Idempotent by stream sequence. Pure.
 */
export function evolveExecutionDoc(doc: ExecutionDoc | undefined, f: Fact<ExecEvent>): ExecutionDoc {
  const e = f.event;
  const s = doc ?? empty(e.tenantId, f.aggregateId, f.seq);
  if (f.seq <= s.lastSeq) return s;
  return { ...apply(s, e, f), lastSeq: f.seq };
}

function apply(s: ExecutionDoc, e: ExecEvent, f: Fact<ExecEvent>): ExecutionDoc {
  switch (e.type) {
    case "exec.started":
      return { ...s, sharedRunId: e.data.sharedRunId, dagDigest: e.data.dagDigest, stepCount: e.data.stepCount, epoch: e.data.epoch,
        started: positionOf(f), owners: [...s.owners, { runtimeInstanceId: e.data.runtimeInstanceId, localRunId: e.data.localRunId, epoch: e.data.epoch, seq: f.seq, via: "started" }] };
    case "exec.step-completed": {
      const first = !s.steps.some((st) => st.stepId === e.data.stepId && st.completions > 0);
      const steps = upsertStep(s.steps, e.data.stepId, (p) => ({
        stepId: e.data.stepId, status: "completed", attempts: Math.max(p?.attempts ?? 0, e.data.attempt), completions: (p?.completions ?? 0) + 1,
        // The first completion is the one downstream steps used; a duplicate never overwrites it.
        completedSeq: p?.completedSeq ?? f.seq, outputDigest: p?.outputDigest ?? e.data.outputDigest, durationMs: p?.durationMs ?? e.data.durationMs,
        ...(p?.lastError !== undefined ? { lastError: p.lastError } : {}), ...((p?.epoch ?? e.writer.epoch) !== undefined ? { epoch: p?.epoch ?? e.writer.epoch } : {}),
      }));
      return { ...s, steps, completedSteps: s.completedSteps + (first ? 1 : 0), duplicateCompletions: s.duplicateCompletions + (first ? 0 : 1) };
    }
    case "exec.step-failed": {
      const steps = upsertStep(s.steps, e.data.stepId, (p) => (p?.status === "completed" ? p : {
        stepId: e.data.stepId, status: "failed", attempts: Math.max(p?.attempts ?? 0, e.data.attempt), completions: 0, lastError: e.data.error,
      }));
      return { ...s, steps, failedAttempts: s.failedAttempts + 1 };
    }
    case "exec.paused-for-recovery":
      return { ...s, status: "paused-for-recovery", epoch: Math.max(s.epoch, e.data.newEpoch),
        pauses: [...s.pauses, { forensicsId: e.data.forensicsId, incidentId: e.data.incidentId, failedRuntimeInstanceId: e.data.failedRuntimeInstanceId, newEpoch: e.data.newEpoch, seq: f.seq }] };
    case "exec.resumed":
      return { ...s, status: "running", epoch: Math.max(s.epoch, e.data.epoch),
        owners: [...s.owners, { runtimeInstanceId: e.data.runtimeInstanceId, localRunId: e.data.localRunId, epoch: e.data.epoch, seq: f.seq, via: "resumed" }] };
    case "exec.completed": return { ...s, status: "completed", ended: { ...positionOf(f), status: "completed", outputDigest: e.data.outputDigest } };
    case "exec.failed": return { ...s, status: "failed", ended: { ...positionOf(f), status: "failed", reasonCode: e.data.reason.code, reasonDetail: e.data.reason.detail } };
    case "exec.cancelled": return { ...s, status: "cancelled", ended: { ...positionOf(f), status: "cancelled", reasonDetail: e.data.reason } };
    default: return assertNever(e, "exec event");
  }
}
