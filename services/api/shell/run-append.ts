import {
  buildEvent,
  isDroverError,
  type DataOf,
  type EventOf,
  type EventType,
  type TenantId,
} from "../../../contracts/index.ts";
import { aggregateSubject, runRef } from "../../../streams/subjects.ts";
import type { ApiDeps } from "./deps.ts";
import { readReadable, type ReadableHistory } from "./run-queries.ts";

const ATTEMPTS = 5;

/** An event a decision wants on the run (its msg-id defaults to the subject and the event id). */
export interface RunAppend<T extends EventType> {
  readonly type: T;
  readonly data: DataOf<T>;
  readonly msgId?: string;
}

/** A decision over the run's history: the answer, and the event to append first (none: answer at once). */
export type RunDecision<R, T extends EventType> =
  | { readonly answer: R; readonly append?: undefined }
  | { readonly append: RunAppend<T>; readonly answer: (seq: number, event: EventOf<T>) => R };

/**
 * The API's read-decide-append loop on one of a tenant's runs (cancel, signal, upgrade, fork link):
 * reads the run (the tenant's own subjects), lets `decide` answer from what is there, and appends the
 * event it asks for conditionally on the run's last sequence (which counts an undecodable message
 * after the last event). A version conflict means the run moved meanwhile: it is read and decided
 * again, a few times, then the conflict is answered (retryable). Never "someone else did it" unread.
 */
export async function decideOnRun<R, T extends EventType>(
  deps: ApiDeps,
  tenantId: TenantId,
  sharedRunId: string,
  requestId: string,
  decide: (history: ReadableHistory) => Promise<RunDecision<R, T>> | RunDecision<R, T>,
): Promise<R> {
  const ref = runRef(tenantId, sharedRunId);
  for (let attempt = 1; ; attempt++) {
    const history = await readReadable(deps.store, ref);
    const d = await decide(history);
    if (d.append === undefined) return d.answer;
    const eventId = `ev-${deps.newId()}`;
    const event = buildEvent(
      d.append.type,
      d.append.data,
      {
        tenantId,
        correlationId: sharedRunId,
        causationId: `http-request:${requestId}`,
        writer: { service: "api", instanceId: deps.instanceId },
      },
      { eventId, now: deps.clock.now() },
    );
    try {
      const { seq } = await deps.store.append(ref, event, {
        expectedSeq: history.lastSeq,
        msgId: d.append.msgId ?? `${aggregateSubject(deps.layout, ref)}:${eventId}`,
      });
      return d.answer(seq, event);
    } catch (e) {
      if (!isDroverError(e, "version-conflict") || attempt >= ATTEMPTS) throw e;
    }
  }
}
