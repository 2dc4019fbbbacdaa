import { isTerminal } from "../../../aggregates/run.ts";
import type { RuntimeCommand } from "../../../contracts/index.ts";
import { admissionCancels } from "../domain/run-decider.ts";
import { appendRunDecision } from "./append-run.ts";
import type { Placeable } from "./candidates.ts";
import type { AdmissionDeps } from "./deps.ts";
import type { IndexedRun } from "./run-index.ts";
import type { Send } from "./sender.ts";

type Target = Pick<Placeable, "runtimeInstanceId" | "endpoint" | "transport">;

/**
 * A run whose cancel was requested (`run.cancel-requested`). One that holds no runtime able to
 * write it — queued globally, requeued, admitted, or dispatched but not started — is ended here:
 * `cancelled` conditionally on the run's last sequence, then its slot reservation released; a
 * dispatched one also gets CancelRun, so the runtime drops it from its local queue (best effort:
 * it could not start it anyway). A started run is the runtime's: CancelRun aborts its steps and the
 * runtime appends exec and run `cancelled`; admission asks again every dispatchTimeoutMs until the
 * run ends. A runtime that is gone is recovery's case: the run comes back requeued and is
 * cancelled here, never placed again.
 */
export async function cancelRun(
  deps: AdmissionDeps,
  r: IndexedRun,
  candidates: readonly Placeable[],
  now: number,
): Promise<Send | undefined> {
  const s = r.state;
  if (isTerminal(s.status) || !s.cancelRequested) return undefined;
  const placement = s.placement;
  const target = placement && candidates.find((c) => c.runtimeInstanceId === placement.runtimeInstanceId);
  if (admissionCancels(s)) {
    const seq = await appendRunDecision(deps, r, { kind: "Cancel" }, `cancel:${s.cancelRequested.seq}`);
    if (seq === undefined || !placement) return undefined;
    await deps.reservations.release(placement.runtimeInstanceId, r.sharedRunId);
    if (placement.dispatchedSeq === undefined || !target?.endpoint) return undefined;
    return () => sendCancel(deps, target, placement.localRunId).catch(() => undefined);
  }
  if (s.status !== "started" || !placement || now - (r.checkedMs ?? 0) < deps.config.dispatchTimeoutMs)
    return undefined;
  r.checkedMs = now;
  return target?.endpoint ? () => sendCancel(deps, target, placement.localRunId) : undefined;
}

async function sendCancel(deps: AdmissionDeps, target: Target, localRunId: string): Promise<void> {
  const res = await deps.send(
    target.endpoint!,
    target.transport,
    {
      operation: "CancelRun",
      runtimeInstanceId: target.runtimeInstanceId,
      correlationId: localRunId,
      payload: { localRunId },
    } as RuntimeCommand,
    deps.commandTokenFor(target.runtimeInstanceId),
    deps.config.dispatchTimeoutMs,
  );
  deps.log.info(
    {
      runtime: target.runtimeInstanceId,
      localRunId,
      success: res.success,
      state: (res.payload as { run?: { state?: string } })?.run?.state,
    },
    "CancelRun sent",
  );
}
