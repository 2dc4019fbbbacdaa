import { foldRun } from "../../../aggregates/run.ts";
import { DroverError, isDroverError, type TenantId } from "../../../contracts/index.ts";
import { execRef, runRef, type AggregateRef } from "../../../streams/subjects.ts";
import type { AggregateHistory, EventStore, StoredEvent } from "../../../streams/types.ts";
import {
  executionIdsOf,
  runDetail,
  runView,
  undecodableSubmissionView,
  type RunDetail,
  type RunView,
} from "../domain/run-view.ts";

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

/** The aggregate's history; a store contract-violation (an undecodable event) raises {@link StoredEventUnreadable} (500), not 400. */
async function readHistory(
  store: EventStore,
  ref: AggregateRef,
  opts?: { readonly skipUndecodable?: boolean },
): Promise<AggregateHistory> {
  try {
    return await store.read(ref, opts);
  } catch (e) {
    throw isDroverError(e, "contract-violation") ? new StoredEventUnreadable(e) : e;
  }
}

/** The aggregate's stored events; an undecodable one raises {@link StoredEventUnreadable} (500), not the store's contract-violation (400). */
export async function readAggregate(store: EventStore, ref: AggregateRef): Promise<readonly StoredEvent[]> {
  return (await readHistory(store, ref)).events;
}

const notFound = (sharedRunId: string) =>
  new DroverError("not-found", `no run ${sharedRunId}`, { details: { sharedRunId } });

/**
 * The run `sharedRunId` of `tenantId`, folded, and the events it was folded from. The read is
 * confined to the tenant's own subjects, so another tenant's run is indistinguishable from a missing
 * one: both are `not-found`. A trusted producer's undecodable `submitted` shows as that run,
 * `submitted` then `rejected` (its reason is in the `rejected` event); any other undecodable event
 * is {@link StoredEventUnreadable}.
 */
async function readRunHistory(
  store: EventStore,
  tenantId: TenantId,
  sharedRunId: string,
): Promise<{ view: RunView; events: readonly StoredEvent[] }> {
  const { events, undecodable = [] } = await readHistory(store, runRef(tenantId, sharedRunId), {
    skipUndecodable: true,
  });
  const state = foldRun(events);
  const view =
    undecodable.length === 0 ? runView(state) : undecodableSubmissionView(tenantId, sharedRunId, state, undecodable);
  if (undecodable.length > 0 && view === undefined) {
    throw new StoredEventUnreadable(
      new DroverError(
        "contract-violation",
        `${undecodable[0]!.subject} (stream sequence ${undecodable[0]!.seq}): ${undecodable[0]!.error}`,
      ),
    );
  }
  if (view === undefined) throw notFound(sharedRunId);
  return { view, events };
}

export async function readRun(store: EventStore, tenantId: TenantId, sharedRunId: string): Promise<RunView> {
  return (await readRunHistory(store, tenantId, sharedRunId)).view;
}

/**
 * The run's events and the events of every execution it started, merged in stream order (the one
 * total order). `not-found` as for {@link readRun}; an undecodable submission is left out (the
 * `rejected` event that follows it says why).
 */
export async function readRunEvents(
  store: EventStore,
  tenantId: TenantId,
  sharedRunId: string,
): Promise<StoredEvent[]> {
  return (await readRunWithJournals(store, tenantId, sharedRunId)).events;
}

async function readRunWithJournals(
  store: EventStore,
  tenantId: TenantId,
  sharedRunId: string,
): Promise<{ view: RunView; events: StoredEvent[] }> {
  const { view, events: run } = await readRunHistory(store, tenantId, sharedRunId);
  const journals = await Promise.all(executionIdsOf(run).map((id) => readAggregate(store, execRef(tenantId, id))));
  return { view, events: [...run, ...journals.flat()].sort((a, b) => a.seq - b.seq) };
}

/** The run with its labels and step states ({@link runDetail}); `not-found` as for {@link readRun}. */
export async function readRunDetail(store: EventStore, tenantId: TenantId, sharedRunId: string): Promise<RunDetail> {
  const { view, events } = await readRunWithJournals(store, tenantId, sharedRunId);
  return runDetail(view, events);
}
