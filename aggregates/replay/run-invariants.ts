import type { DroverEvent } from "../../contracts/index.ts";
import { assertNever } from "../../contracts/assert-never.ts";
import type { SequencedEvent } from "../execution.ts";
import type { RunEvent } from "../run.ts";
import { diverged, match, type Divergence, type ValidationResult } from "./result.ts";

type Check = Omit<Divergence, "scope"> | undefined;

/** What the run aggregate has proven so far, as far as recovery identities are concerned. */
interface Seen {
  completedAt?: number;
  dispatched?: { readonly localRunId: string; readonly seq: number };
  readonly localRunIds: Set<string>;
  readonly executionIds: Set<string>;
  executionId?: string;
  /** The recovery the next `started` must honour. */
  pending?:
    | { readonly kind: "resume"; readonly executionId: string; readonly failedLocalRunId: string; readonly seq: number }
    | { readonly kind: "local-queued"; readonly failedLocalRunId: string; readonly seq: number };
}

/**
 * Replays one run aggregate (`drover.run.<tenant>.<sharedRunId>.*`, stream order) and checks the
 * identities recovery must keep (recovery.md "Classify and recover"): exactly one `completed` per
 * SharedRunId; a `started` names the LocalRunId of the latest `dispatched`; `requeued-for-resume`
 * only for a run whose execution started, and the next `started` continues that ExecutionId under a
 * new LocalRunId; `requeued-for-local-queued-recovery` only for a run that never started, and the
 * redispatch uses a new LocalRunId and creates a new ExecutionId. Returns `match` or the first
 * divergence with its stream sequence. Pure, never throws.
 */
export function validateRun(sharedRunId: string, events: readonly SequencedEvent[]): ValidationResult {
  const scope = `run ${sharedRunId}`;
  const seen: Seen = { localRunIds: new Set(), executionIds: new Set() };
  let checked = 0;
  for (const { seq, event } of events) {
    if (!isRunEvent(event)) continue;
    checked += 1;
    const found = step(seen, seq, event);
    if (found) return diverged(scope, checked, found);
  }
  return match(scope, checked, seen.completedAt === undefined ? [`run ${sharedRunId} has not completed`] : []);
}

const isRunEvent = (e: DroverEvent): e is RunEvent => e.type.startsWith("run.");

function step(s: Seen, seq: number, event: RunEvent): Check {
  switch (event.type) {
    case "run.admitted":
    case "run.dispatched": {
      const { localRunId } = event.data;
      // admitted then dispatched name the same new LocalRunId; only a dispatch may not reuse an old one.
      if (s.pending?.kind === "local-queued" && event.type === "run.admitted" && s.localRunIds.has(localRunId)) {
        return {
          invariant: "redispatch-reused-local-run",
          seq,
          message: `run.admitted at seq ${seq} redispatches the local-queued recovery (requeued at seq ${s.pending.seq}) under LocalRunId ${localRunId}, which the run already used`,
        };
      }
      s.localRunIds.add(localRunId);
      if (event.type === "run.dispatched") s.dispatched = { localRunId, seq };
      return undefined;
    }
    case "run.started":
      return started(s, seq, event.data);
    case "run.requeued-for-resume":
      if (!s.executionId) {
        return {
          invariant: "misclassified-recovery",
          seq,
          message: `requeued-for-resume at seq ${seq} for a run that never started an execution: it is local-queued work and must be redispatched`,
        };
      }
      if (event.data.executionId !== s.executionId) {
        return {
          invariant: "resume-new-execution",
          seq,
          message: `requeued-for-resume at seq ${seq} names execution ${event.data.executionId}, the run's execution is ${s.executionId}`,
        };
      }
      s.pending = {
        kind: "resume",
        executionId: event.data.executionId,
        failedLocalRunId: event.data.failedLocalRunId,
        seq,
      };
      s.dispatched = undefined;
      return undefined;
    case "run.requeued-for-local-queued-recovery":
      if (s.executionId) {
        return {
          invariant: "misclassified-recovery",
          seq,
          message: `requeued-for-local-queued-recovery at seq ${seq} for a run whose execution ${s.executionId} started: it must be resumed under that ExecutionId`,
        };
      }
      s.pending = { kind: "local-queued", failedLocalRunId: event.data.failedLocalRunId, seq };
      s.dispatched = undefined;
      return undefined;
    case "run.completed":
      if (s.completedAt !== undefined)
        return {
          invariant: "duplicate-run-completed",
          seq,
          message: `second run.completed at seq ${seq}; the run already completed at seq ${s.completedAt}`,
        };
      s.completedAt = seq;
      return undefined;
    case "run.dispatch-failed":
      s.dispatched = undefined;
      return undefined;
    case "run.submitted":
    case "run.queued-globally":
    case "run.scale-out-requested":
    case "run.replacement-selected":
    case "run.failed":
    case "run.cancel-requested":
    case "run.forked":
    case "run.upgraded":
    case "run.signal-received":
    case "run.cancelled":
    case "run.rejected":
      return undefined;
    default:
      return assertNever(event);
  }
}

function started(s: Seen, seq: number, d: { readonly executionId: string; readonly localRunId: string }): Check {
  if (s.dispatched?.localRunId !== d.localRunId) {
    return {
      invariant: "started-without-dispatch",
      seq,
      message: `run.started at seq ${seq} by LocalRunId ${d.localRunId}, but the latest dispatch is ${s.dispatched ? `${s.dispatched.localRunId} (seq ${s.dispatched.seq})` : "none"}`,
    };
  }
  const p = s.pending;
  if (p?.kind === "resume" && d.executionId !== p.executionId) {
    return {
      invariant: "resume-new-execution",
      seq,
      message: `run.started at seq ${seq} created execution ${d.executionId}; the resume requeued at seq ${p.seq} must continue ${p.executionId}`,
    };
  }
  if (p && d.localRunId === p.failedLocalRunId) {
    return {
      invariant: "redispatch-reused-local-run",
      seq,
      message: `run.started at seq ${seq} under the failed LocalRunId ${d.localRunId} (requeued at seq ${p.seq}); every redispatch needs a new one`,
    };
  }
  if (p?.kind === "local-queued" && s.executionIds.has(d.executionId)) {
    return {
      invariant: "redispatch-reused-execution",
      seq,
      message: `run.started at seq ${seq} reuses execution ${d.executionId} after the local-queued recovery at seq ${p.seq}; a redispatch creates a new one`,
    };
  }
  s.pending = undefined;
  s.executionId = d.executionId;
  s.executionIds.add(d.executionId);
  return undefined;
}
