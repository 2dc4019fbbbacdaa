import { foldRun } from "../../../aggregates/run.ts";
import { DroverError, isDroverError, type TenantId } from "../../../contracts/index.ts";
import { execRef, runRef, type AggregateRef } from "../../../streams/subjects.ts";
import type { EventStore, StoredEvent } from "../../../streams/types.ts";
import { executionIdsOf, runView, type RunView } from "../domain/run-view.ts";

/**
 * A stored event that no longer parses is the server's problem, not the caller's: it must not be
 * answered as the caller's `contract-violation` (400). It surfaces as 500 `internal`, and the log
 * keeps the store's message naming the stream sequence.
 */
export class StoredEventUnreadable extends Error {
  constructor(cause: DroverError) {
    super(`a stored event could not be decoded: ${cause.message}`, { cause });
    this.name = "StoredEventUnreadable";
  }
}

/** The aggregate's stored events; an undecodable one raises {@link StoredEventUnreadable} (500), not the store's contract-violation (400). */
export async function readAggregate(store: EventStore, ref: AggregateRef): Promise<readonly StoredEvent[]> {
  try {
    return (await store.read(ref)).events;
  } catch (e) {
    throw isDroverError(e, "contract-violation") ? new StoredEventUnreadable(e) : e;
  }
}

const notFound = (sharedRunId: string) => new DroverError("not-found", `no run ${sharedRunId}`, { details: { sharedRunId } });

/**
 * The run `sharedRunId` of `tenantId`, folded. The read is confined to the tenant's own subjects,
 * so another tenant's run is indistinguishable from a missing one: both are `not-found`.
 */
export async function readRun(store: EventStore, tenantId: TenantId, sharedRunId: string): Promise<RunView> {
  const view = runView(foldRun(await readAggregate(store, runRef(tenantId, sharedRunId))));
  if (view === undefined) throw notFound(sharedRunId);
  return view;
}

/**
 * The run's events and the events of every execution it started, merged in stream order (the one
 * total order). `not-found` as for {@link readRun}.
 */
export async function readRunEvents(store: EventStore, tenantId: TenantId, sharedRunId: string): Promise<StoredEvent[]> {
  const run = await readAggregate(store, runRef(tenantId, sharedRunId));
  if (runView(foldRun(run)) === undefined) throw notFound(sharedRunId);
  const journals = await Promise.all(executionIdsOf(run).map((id) => readAggregate(store, execRef(tenantId, id))));
  return [...run, ...journals.flat()].sort((a, b) => a.seq - b.seq);
}
