import type { DroverEvent } from "../../../contracts/index.ts";
import { executionDocId, type ExecutionDoc } from "../../../contracts/read-models.ts";
import { assertNever } from "../../../contracts/assert-never.ts";
import { positionOf, type Fact } from "./fact.ts";

type ExecEvent = Extract<DroverEvent, { type: `exec.${string}` }>;

const empty = (tenantId: string, executionId: string, seq: number): ExecutionDoc => ({
  _id: executionDocId(tenantId, executionId),
  tenantId,
  executionId,
  status: "running",
  epoch: 0,
  owners: [],
  pauses: [],
  firstSeq: seq,
  lastSeq: 0,
});

/**
 * Folds one journal event into the execution's summary: owners by epoch, pauses for recovery and
 * the end. Step events return the document itself (nothing to write: see ExecutionDoc), unless
 * the execution was never seen, so a journal read from its middle still has a document.
 * Idempotent by stream sequence. Pure.
 */
export function evolveExecutionDoc(doc: ExecutionDoc | undefined, f: Fact<ExecEvent>): ExecutionDoc {
  const e = f.event;
  const s = doc ?? empty(e.tenantId, f.aggregateId, f.seq);
  if (
    f.seq <= s.lastSeq ||
    (doc !== undefined &&
      (e.type === "exec.step-completed" ||
        e.type === "exec.step-failed" ||
        e.type === "exec.timer-started" ||
        e.type === "exec.condition-evaluated" ||
        e.type === "exec.step-reused" ||
        e.type === "exec.child-run-submitted"))
  )
    return s;
  return { ...apply(s, e, f), lastSeq: f.seq };
}

function apply(s: ExecutionDoc, e: ExecEvent, f: Fact<ExecEvent>): ExecutionDoc {
  switch (e.type) {
    case "exec.started":
      return {
        ...s,
        sharedRunId: e.data.sharedRunId,
        dagDigest: e.data.dagDigest,
        stepCount: e.data.stepCount,
        epoch: e.data.epoch,
        started: positionOf(f),
        owners: [
          ...s.owners,
          {
            runtimeInstanceId: e.data.runtimeInstanceId,
            localRunId: e.data.localRunId,
            epoch: e.data.epoch,
            seq: f.seq,
            via: "started",
          },
        ],
      };
    case "exec.step-completed":
    case "exec.step-failed":
    case "exec.timer-started":
    case "exec.condition-evaluated":
    case "exec.step-reused":
    case "exec.child-run-submitted":
    case "exec.wait-opened":
    case "exec.wait-resolved":
      return s;
    case "exec.map-expanded": {
      const { stepId, count, maxConcurrency, toleratedFailures, itemsDigest } = e.data;
      const map = { stepId, count, maxConcurrency, toleratedFailures, itemsDigest, seq: f.seq };
      return { ...s, maps: [...(s.maps ?? []), map] };
    }
    case "exec.step-skipped":
      return { ...s, skipped: [...(s.skipped ?? []), { stepId: e.data.stepId, reason: e.data.reason, seq: f.seq }] };
    case "exec.paused-for-recovery":
      return {
        ...s,
        status: "paused-for-recovery",
        epoch: Math.max(s.epoch, e.data.newEpoch),
        pauses: [
          ...s.pauses,
          {
            forensicsId: e.data.forensicsId,
            incidentId: e.data.incidentId,
            failedRuntimeInstanceId: e.data.failedRuntimeInstanceId,
            newEpoch: e.data.newEpoch,
            seq: f.seq,
          },
        ],
      };
    case "exec.resumed":
      return {
        ...s,
        status: "running",
        epoch: Math.max(s.epoch, e.data.epoch),
        owners: [
          ...s.owners,
          {
            runtimeInstanceId: e.data.runtimeInstanceId,
            localRunId: e.data.localRunId,
            epoch: e.data.epoch,
            seq: f.seq,
            via: "resumed",
          },
        ],
      };
    case "exec.completed":
      return {
        ...s,
        status: "completed",
        ended: { ...positionOf(f), status: "completed", outputDigest: e.data.outputDigest },
      };
    case "exec.failed":
      return {
        ...s,
        status: "failed",
        ended: {
          ...positionOf(f),
          status: "failed",
          reasonCode: e.data.reason.code,
          reasonDetail: e.data.reason.detail,
        },
      };
    case "exec.cancelled":
      return {
        ...s,
        status: "cancelled",
        ended: { ...positionOf(f), status: "cancelled", reasonDetail: e.data.reason },
      };
    default:
      return assertNever(e, "exec event");
  }
}
