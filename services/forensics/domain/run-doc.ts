import { isPlannedStopId, type DroverEvent } from "../../../contracts/index.ts";
import { runDocId, type PlacementRow, type RunDoc } from "../../../contracts/read-models.ts";
import { assertNever } from "../../../contracts/assert-never.ts";
import { addOnce, positionOf, type Fact } from "./fact.ts";

type RunEvent = Extract<DroverEvent, { type: `run.${string}` }>;

const empty = (tenantId: string, sharedRunId: string, seq: number): RunDoc => ({
  _id: runDocId(tenantId, sharedRunId),
  tenantId,
  sharedRunId,
  status: "none",
  stepCount: 0,
  labels: [],
  placements: [],
  executionIds: [],
  forensicsIds: [],
  incidentIds: [],
  scaleOutRequestIds: [],
  firstSeq: seq,
  lastSeq: 0,
});

const updateLast = (ps: readonly PlacementRow[], localRunId: string, patch: Partial<PlacementRow>): PlacementRow[] =>
  ps.map((p, i) =>
    p.localRunId === localRunId && ps.findLastIndex((q) => q.localRunId === localRunId) === i ? { ...p, ...patch } : p,
  );

/**
 * Folds one run event into the run's document. Idempotent by stream sequence: a fact at or below
 * `lastSeq` returns the document unchanged (the projector then writes nothing). Pure.
 */
export function evolveRunDoc(doc: RunDoc | undefined, f: Fact<RunEvent>): RunDoc {
  const e = f.event;
  const s = doc ?? empty(e.tenantId, f.aggregateId, f.seq);
  if (f.seq <= s.lastSeq) return s;
  return { ...apply(s, e, f), lastSeq: f.seq };
}

function apply(s: RunDoc, e: RunEvent, f: Fact<RunEvent>): RunDoc {
  const ended = (status: string): RunDoc => ({ ...s, status, ended: { ...positionOf(f), status } });
  switch (e.type) {
    case "run.submitted":
      // A trusted producer may publish a second submission of the same run; only the first counts.
      if (s.submitted) return s;
      return {
        ...s,
        status: "submitted",
        ...(e.data.dag.name ? { dagName: e.data.dag.name } : {}),
        stepCount: e.data.dag.steps.length,
        source: e.data.source,
        ...(e.data.idempotencyKey ? { idempotencyKey: e.data.idempotencyKey } : {}),
        labels: Object.entries(e.data.labels)
          .map(([key, value]) => ({ key, value }))
          .sort((a, b) => a.key.localeCompare(b.key)),
        submitted: positionOf(f),
        ...(e.data.rerunOf ? { rerunOf: e.data.rerunOf } : {}),
      };
    case "run.admitted":
      return {
        ...s,
        status: "admitted",
        placements: [
          ...s.placements,
          {
            localRunId: e.data.localRunId,
            runtimeInstanceId: e.data.runtimeInstanceId,
            admittedSeq: f.seq,
            recovery: e.data.recovery,
            candidates: e.data.candidates.length,
          },
        ],
      };
    case "run.queued-globally":
      return { ...s, status: "queued", lastReason: { ...e.data.reason } };
    case "run.scale-out-requested":
      return { ...s, scaleOutRequestIds: addOnce(s.scaleOutRequestIds, e.data.requestId as string) };
    case "run.dispatch-failed":
      return {
        ...s,
        status: "queued",
        lastReason: { ...e.data.reason },
        placements: updateLast(s.placements, e.data.localRunId, {
          dispatchFailedSeq: f.seq,
          dispatchFailure: e.data.reason.code,
        }),
      };
    case "run.dispatched":
      return {
        ...s,
        status: "dispatched",
        placements: updateLast(s.placements, e.data.localRunId, {
          dispatchedSeq: f.seq,
          transport: e.data.transport,
          ...(e.data.resumeExecutionId ? { resumeExecutionId: e.data.resumeExecutionId } : {}),
        }),
      };
    case "run.started":
      return { ...s, status: "started", executionIds: addOnce(s.executionIds, e.data.executionId as string) };
    case "run.requeued-for-resume":
    case "run.requeued-for-local-queued-recovery":
      return {
        ...s,
        status: e.type.slice("run.".length),
        forensicsIds: addOnce(s.forensicsIds, e.data.forensicsId as string),
        // A planned stop's `stop-…` id is no incident.
        incidentIds: isPlannedStopId(e.data.incidentId)
          ? s.incidentIds
          : addOnce(s.incidentIds, e.data.incidentId as string),
      };
    case "run.replacement-selected":
      return { ...s, forensicsIds: addOnce(s.forensicsIds, e.data.forensicsId as string) };
    case "run.completed":
      return { ...ended("completed"), executionIds: addOnce(s.executionIds, e.data.executionId as string) };
    case "run.failed":
      return { ...ended("failed"), lastReason: { ...e.data.reason } };
    case "run.cancel-requested":
      return s.cancelRequested
        ? s
        : { ...s, cancelRequested: { ...positionOf(f), by: e.data.by, reason: e.data.reason } };
    case "run.forked":
    case "run.upgraded":
    case "run.signal-received":
      return s;
    case "run.cancelled":
      return ended("cancelled");
    case "run.rejected":
      return { ...ended("rejected"), lastReason: { ...e.data.reason } };
    default:
      return assertNever(e, "run event");
  }
}
