import {
  DroverError,
  isDroverError,
  RuntimeInstanceId,
  type DataOf,
  type DroverEvent,
} from "../../../contracts/index.ts";
import { scaleOutRef, type AggregateRef, type EventStore } from "../../../streams/index.ts";
import type { Origin } from "./context.ts";
import {
  evolveRequest,
  initialRequestState,
  isTerminal,
  type RequestState,
  type ScaleOutEvent,
} from "../domain/request-state.ts";
import { stamp, type ProvisionerDeps } from "./context.ts";

const MAX_CONFLICTS = 8;

/**
 * The request aggregate folded from the store. `deliveredSeq`: the sequence of the `requested` event
 * this handler was delivered. A replica of an R3 stream that has not applied it yet (a leader
 * election: the message was acked and delivered by the leader that died) answers with a history
 * ending before it; folded, the request read as "none" and the delivery was acked unhandled, so the
 * request stayed open with no one driving it (`nats-leader-kill` proof). Such a read fails
 * retryably instead: the consumer redelivers once the replicas have it.
 */
export async function readRequest(store: EventStore, ref: AggregateRef, deliveredSeq = 0): Promise<RequestState> {
  const h = await store.read(ref, deliveredSeq > 0 ? { atLeastSeq: deliveredSeq } : undefined);
  if (h.lastSeq < deliveredSeq)
    throw new DroverError(
      "event-store-unavailable",
      `read of scale-out request ${ref.id} ended at sequence ${h.lastSeq}, before its delivered sequence ${deliveredSeq} (a replica behind)`,
      { retryable: true, details: { deliveredSeq, lastSeq: h.lastSeq } },
    );
  return h.events.reduce((s, e) => evolveRequest(s, e.seq, e.event as ScaleOutEvent), initialRequestState());
}

export const originOf = (d: ProvisionerDeps, s: RequestState): Origin => ({
  instanceId: d.instanceId,
  correlationId: s.request?.requestId ?? "unknown",
  causationId: s.requestedEventId ?? "unknown",
  ...(s.tenantId ? { tenantId: s.tenantId } : {}),
});

/**
 * Appends `observed` (before any side effect) and returns the request as this handler now drives
 * it, or undefined when there is nothing to drive: the request is terminal, or another handler
 * observed it concurrently (it holds its own delivery and will finish it). An `observed` that was
 * already in the history when we first read it is a dead handler's: we take over, and our append
 * fences it (its next append to the request conflicts).
 */
export async function observe(
  d: ProvisionerDeps,
  tenantId: string,
  requestId: string,
  deliveredSeq?: number,
): Promise<RequestState | undefined> {
  const ref = scaleOutRef(tenantId, requestId);
  let seen: number | undefined;
  for (let conflicts = 0; ; conflicts++) {
    const s = await readRequest(d.store, ref, deliveredSeq);
    if (s.status === "none" || isTerminal(s)) return undefined;
    if (seen !== undefined && s.observations.length > seen) return undefined;
    const e = stamp(d, "scaleout.observed", { provisionerInstanceId: d.instanceId }, originOf(d, s));
    try {
      const a = await d.store.append(ref, e, { expectedSeq: s.lastSeq });
      return evolveRequest(s, a.seq, e);
    } catch (err) {
      if (!isDroverError(err, "version-conflict") || conflicts >= MAX_CONFLICTS) throw err;
      seen = s.observations.length;
    }
  }
}

export type Settlement = DataOf<"scaleout.fulfilled"> | DataOf<"scaleout.rejected"> | DataOf<"scaleout.expired">;

/**
 * Appends the request's outcome, conditional on the request as this handler last saw it. On a
 * conflict it re-reads: a terminal request or a newer `observed` (another handler took over) means
 * the outcome is not ours to write and nothing is appended (returns false).
 */
export async function settle(
  d: ProvisionerDeps,
  s: RequestState,
  event: Extract<DroverEvent, { type: "scaleout.fulfilled" | "scaleout.rejected" | "scaleout.expired" }>,
): Promise<boolean> {
  const ref = scaleOutRef(s.tenantId as string, s.request?.requestId as string);
  const mine = s.observations.length;
  let expected = s.lastSeq;
  for (let conflicts = 0; ; conflicts++) {
    try {
      await d.store.append(ref, event, { expectedSeq: expected });
      return true;
    } catch (err) {
      if (!isDroverError(err, "version-conflict") || conflicts >= MAX_CONFLICTS) throw err;
      const now = await readRequest(d.store, ref);
      if (isTerminal(now) || now.observations.length > mine) return false;
      expected = now.lastSeq;
    }
  }
}

/** Builds the outcome event for `s`. */
export const outcome = {
  // The provisioner's roster carries ids as its subjects spell them; they are parsed where they enter an event.
  fulfilled: (d: ProvisionerDeps, s: RequestState, runtimeInstanceId: string) =>
    stamp(d, "scaleout.fulfilled", { runtimeInstanceId: RuntimeInstanceId.parse(runtimeInstanceId) }, originOf(d, s)),
  rejected: (
    d: ProvisionerDeps,
    s: RequestState,
    reason: DataOf<"scaleout.rejected">["reason"],
    runtimeInstanceId?: string,
  ) =>
    stamp(
      d,
      "scaleout.rejected",
      { reason, ...(runtimeInstanceId ? { runtimeInstanceId: RuntimeInstanceId.parse(runtimeInstanceId) } : {}) },
      originOf(d, s),
    ),
  expired: (d: ProvisionerDeps, s: RequestState) => stamp(d, "scaleout.expired", {}, originOf(d, s)),
};
