import { foldRun, isTerminal } from "../../../aggregates/run.ts";
import { DroverError, type Credential, type TenantId } from "../../../contracts/index.ts";
import type { ApiDeps } from "./deps.ts";
import { decideOnRun } from "./run-append.ts";

/** Who a credential is, as recorded in `run.cancel-requested` (never taken from the body). */
export const principalOf = (c: Credential): string =>
  c.role === "tenant" ? `tenant:${c.tenantId}` : `operator:${c.name}`;

/** What a cancel request found: `requested` now, requested earlier, or the run already `cancelled`. */
export type CancelOutcome = "requested" | "already-requested" | "cancelled";

/**
 * Appends `run.cancel-requested` to the tenant's run, conditionally on the run's last sequence.
 * Idempotent: a run whose cancel was already requested, or that is already cancelled, gets nothing
 * more. A run that ended otherwise is `run-terminal` (409, details.status). A version conflict
 * means the run moved meanwhile: the run is read again and the decision taken again (a few times,
 * then the conflict is answered, retryable). Admission and the runtime do the cancelling.
 */
export async function requestCancel(
  deps: ApiDeps,
  tenantId: TenantId,
  sharedRunId: string,
  by: string,
  reason: string,
  requestId: string,
): Promise<CancelOutcome> {
  return decideOnRun<CancelOutcome, "run.cancel-requested">(deps, tenantId, sharedRunId, requestId, (history) => {
    const s = foldRun(history.events);
    if (s.status === "none") throw new DroverError("not-found", `no run ${sharedRunId}`, { details: { sharedRunId } });
    if (s.status === "cancelled") return { answer: "cancelled" as const };
    if (isTerminal(s.status))
      throw new DroverError("run-terminal", `run ${sharedRunId} already ${s.status}`, {
        details: { sharedRunId, status: s.status },
      });
    if (s.cancelRequested) return { answer: "already-requested" as const };
    return { append: { type: "run.cancel-requested", data: { by, reason } }, answer: () => "requested" as const };
  });
}
