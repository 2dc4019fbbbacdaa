import { foldRun, isTerminal } from "../../../aggregates/run.ts";
import { buildEvent, DroverError, isDroverError, type Credential, type TenantId } from "../../../contracts/index.ts";
import { aggregateSubject, runRef } from "../../../streams/subjects.ts";
import type { ApiDeps } from "./deps.ts";
import { readReadable } from "./run-queries.ts";

/** Who a credential is, as recorded in `run.cancel-requested` (never taken from the body). */
export const principalOf = (c: Credential): string =>
  c.role === "tenant" ? `tenant:${c.tenantId}` : `operator:${c.name}`;

/** What a cancel request found: `requested` now, requested earlier, or the run already `cancelled`. */
export type CancelOutcome = "requested" | "already-requested" | "cancelled";

const ATTEMPTS = 5;

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
  const ref = runRef(tenantId, sharedRunId);
  for (let attempt = 1; ; attempt++) {
    const history = await readReadable(deps.store, ref);
    const s = foldRun(history.events);
    if (s.status === "none") throw new DroverError("not-found", `no run ${sharedRunId}`, { details: { sharedRunId } });
    if (s.status === "cancelled") return "cancelled";
    if (isTerminal(s.status))
      throw new DroverError("run-terminal", `run ${sharedRunId} already ${s.status}`, {
        details: { sharedRunId, status: s.status },
      });
    if (s.cancelRequested) return "already-requested";
    const eventId = `ev-${deps.newId()}`;
    const event = buildEvent(
      "run.cancel-requested",
      { by, reason },
      {
        tenantId,
        correlationId: sharedRunId,
        causationId: `http-request:${requestId}`,
        writer: { service: "api", instanceId: deps.instanceId },
      },
      { eventId, now: deps.clock.now() },
    );
    try {
      await deps.store.append(ref, event, {
        expectedSeq: history.lastSeq, // counts an undecodable message after the last event
        msgId: `${aggregateSubject(deps.layout, ref)}:${eventId}`,
      });
      return "requested";
    } catch (e) {
      if (!isDroverError(e, "version-conflict") || attempt >= ATTEMPTS) throw e;
    }
  }
}
