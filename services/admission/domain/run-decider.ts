import { assertNever } from "../../../contracts/assert-never.ts";
import { DroverError, type DataOf, type Reason, type ScaleOutRequestId } from "../../../contracts/index.ts";
import { isTerminal, type RunState } from "../../../aggregates/run.ts";

/** A decision admission takes about one run; the shell appends the result conditionally on the run's lastSeq. */
export type AdmissionCommand =
  | { readonly kind: "Admit"; readonly data: DataOf<"run.admitted"> }
  | { readonly kind: "MarkDispatched"; readonly data: DataOf<"run.dispatched"> }
  | { readonly kind: "MarkDispatchFailed"; readonly data: DataOf<"run.dispatch-failed"> }
  | { readonly kind: "QueueGlobally"; readonly reason: Reason; readonly scaleOutRequestId?: ScaleOutRequestId }
  | { readonly kind: "Reject"; readonly reason: Reason }
  | { readonly kind: "Cancel" };

/** Event bodies to append, in order (the shell wraps them in envelopes). */
export type RunDecision =
  | { readonly type: "run.admitted"; readonly data: DataOf<"run.admitted"> }
  | { readonly type: "run.dispatched"; readonly data: DataOf<"run.dispatched"> }
  | { readonly type: "run.dispatch-failed"; readonly data: DataOf<"run.dispatch-failed"> }
  | { readonly type: "run.queued-globally"; readonly data: DataOf<"run.queued-globally"> }
  | { readonly type: "run.scale-out-requested"; readonly data: DataOf<"run.scale-out-requested"> }
  | { readonly type: "run.rejected"; readonly data: DataOf<"run.rejected"> }
  | { readonly type: "run.cancelled"; readonly data: DataOf<"run.cancelled"> };

/** Why a command does not apply to the run's current state; the shell drops it (another decider moved the run). */
export class NotApplicable extends DroverError {
  constructor(readonly why: string) {
    super("decision-not-applicable", why);
    this.name = "NotApplicable";
  }
}

/** Runs admission may place: new, globally queued, or requeued by recovery — unless a cancel was requested. */
export const isPlaceable = (s: RunState): boolean =>
  s.cancelRequested === undefined &&
  (s.status === "submitted" ||
    s.status === "queued" ||
    s.status === "requeued-for-resume" ||
    s.status === "requeued-for-local-queued-recovery");

/**
 * Whether admission ends a run whose cancel was requested itself: it holds no runtime that could
 * still write it (not started; a dispatched run's `started` expects the `dispatched` sequence, which
 * the cancel request moved past, so its runtime can no longer start it). A started run is the
 * runtime's to cancel (CancelRun).
 */
export const admissionCancels = (s: RunState): boolean =>
  s.cancelRequested !== undefined && !isTerminal(s.status) && s.status !== "started" && s.status !== "none";

/**
 * Decides admission's events for one run (pure). Admission appends `dispatched` before it sends
 * DispatchRun: the intent is durable before the side effect, and the runtime's `run.started` is a
 * conditional append on that `dispatched` sequence, so a run requeued or failed in between can never
 * be started by the runtime that missed the news.
 */
export function decideRun(cmd: AdmissionCommand, s: RunState): RunDecision[] {
  switch (cmd.kind) {
    case "Admit":
      if (!isPlaceable(s)) throw new NotApplicable(`run is ${s.status}, not placeable`);
      if (s.localRunIds.includes(cmd.data.localRunId))
        throw new NotApplicable(`local run ${cmd.data.localRunId} was already used`);
      return [{ type: "run.admitted", data: cmd.data }];
    case "MarkDispatched":
      if (s.status !== "admitted" || s.placement?.localRunId !== cmd.data.localRunId)
        throw new NotApplicable(`run is ${s.status}, not admitted as ${cmd.data.localRunId}`);
      if (s.placement.runtimeInstanceId !== cmd.data.runtimeInstanceId)
        throw new NotApplicable("dispatch target differs from the admitted runtime");
      return [{ type: "run.dispatched", data: cmd.data }];
    case "MarkDispatchFailed":
      if ((s.status !== "admitted" && s.status !== "dispatched") || s.placement?.localRunId !== cmd.data.localRunId) {
        throw new NotApplicable(`run is ${s.status}; ${cmd.data.localRunId} is not its pending placement`);
      }
      return [{ type: "run.dispatch-failed", data: cmd.data }];
    case "QueueGlobally": {
      if (!isPlaceable(s)) throw new NotApplicable(`run is ${s.status}, not placeable`);
      const out: RunDecision[] = [];
      // Re-queuing for the same reason adds nothing to the record: keep the log free of repeats.
      if (!(s.status === "queued" && s.lastReason === cmd.reason.code))
        out.push({ type: "run.queued-globally", data: { reason: cmd.reason } });
      if (cmd.scaleOutRequestId && !s.scaleOutRequestIds.includes(cmd.scaleOutRequestId)) {
        out.push({ type: "run.scale-out-requested", data: { requestId: cmd.scaleOutRequestId } });
      }
      return out;
    }
    case "Cancel":
      if (!admissionCancels(s)) throw new NotApplicable(`run is ${s.status}; admission does not cancel it`);
      return [{ type: "run.cancelled", data: { reason: s.cancelRequested!.reason, by: s.cancelRequested!.by } }];
    case "Reject":
      if (s.status !== "submitted" && s.status !== "none")
        throw new NotApplicable(`run is ${s.status}; only a new submission can be rejected`);
      return [{ type: "run.rejected", data: { reason: cmd.reason } }];
    default:
      return assertNever(cmd, "admission command");
  }
}
