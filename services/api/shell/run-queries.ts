import { foldRun } from "../../../aggregates/run.ts";
import { DroverError, isDroverError, type TenantId } from "../../../contracts/index.ts";
import { execRef, runRef, type AggregateRef } from "../../../streams/subjects.ts";
import type { EventStore, StoredEvent, Undecodable } from "../../../streams/types.ts";
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
 * answered as the caller's `contract-violation` (400). Reads that cannot step over it (the capacity
 * reader's fold) surface it as 500 `internal`, and the log keeps the store's message naming the
 * stream sequence.
 */
export class StoredEventUnreadable extends Error {
  constructor(cause: DroverError) {
    super(`a stored event could not be decoded: ${cause.message}`, { cause });
    this.name = "StoredEventUnreadable";
  }
}

/** An aggregate's decodable events, the ones left out, and its last sequence counting both (for OCC). */
export interface ReadableHistory {
  readonly events: readonly StoredEvent[];
  readonly unreadable: readonly Undecodable[];
  readonly lastSeq: number;
}

/**
 * The aggregate's history with every undecodable message (a buggy producer's garbage, an unknown
 * type, a newer schema) left out and listed: one bad message must not make a run unreadable, and
 * an append after this read still expects the true last sequence.
 */
export async function readReadable(store: EventStore, ref: AggregateRef): Promise<ReadableHistory> {
  let h;
  try {
    h = await store.read(ref, { skipUndecodable: true });
  } catch (e) {
    // A store that still fails with contract-violation is the server's fault, not the caller's 400.
    throw isDroverError(e, "contract-violation") ? new StoredEventUnreadable(e) : e;
  }
  return { events: h.events, unreadable: h.undecodable ?? [], lastSeq: h.lastSeq };
}

/** The aggregate's decodable events (undecodable ones left out, as {@link readReadable}). */
export async function readAggregate(store: EventStore, ref: AggregateRef): Promise<readonly StoredEvent[]> {
  return (await readReadable(store, ref)).events;
}

const notFound = (sharedRunId: string) =>
  new DroverError("not-found", `no run ${sharedRunId}`, { details: { sharedRunId } });

/**
 * The run `sharedRunId` of `tenantId`, folded from its decodable events, and those events. The read
 * is confined to the tenant's own subjects, so another tenant's run is indistinguishable from a
 * missing one: both are `not-found`. An undecodable event is left out of the fold and listed in
 * `unreadable`; a run whose only submission is undecodable (a trusted producer's) shows as that
 * run, `submitted` then `rejected`; undecodable events without any submission are `not-found`.
 */
async function readRunHistory(
  store: EventStore,
  tenantId: TenantId,
  sharedRunId: string,
): Promise<{ view: RunView; events: readonly StoredEvent[]; unreadable: readonly Undecodable[] }> {
  const { events, unreadable } = await readReadable(store, runRef(tenantId, sharedRunId));
  const state = foldRun(events);
  const submittedUnreadably = !events.some((e) => e.event.type === "run.submitted");
  const view = submittedUnreadably
    ? undecodableSubmissionView(tenantId, sharedRunId, state, unreadable)
    : runView(state);
  if (view === undefined) throw notFound(sharedRunId);
  return { view, events, unreadable };
}

export async function readRun(store: EventStore, tenantId: TenantId, sharedRunId: string): Promise<RunView> {
  return (await readRunHistory(store, tenantId, sharedRunId)).view;
}

/**
 * The run's decodable events and those of every execution it started, merged in stream order (the
 * one total order), and the undecodable ones of both, listed. `not-found` as for {@link readRun}.
 */
export async function readRunEvents(
  store: EventStore,
  tenantId: TenantId,
  sharedRunId: string,
): Promise<{ events: StoredEvent[]; unreadable: Undecodable[] }> {
  const { events, unreadable } = await readRunWithJournals(store, tenantId, sharedRunId);
  return { events, unreadable };
}

async function readRunWithJournals(
  store: EventStore,
  tenantId: TenantId,
  sharedRunId: string,
): Promise<{ view: RunView; events: StoredEvent[]; unreadable: Undecodable[] }> {
  const run = await readRunHistory(store, tenantId, sharedRunId);
  const journals = await Promise.all(
    executionIdsOf(run.events).map((id) => readReadable(store, execRef(tenantId, id))),
  );
  const bySeq = (a: { seq: number }, b: { seq: number }) => a.seq - b.seq;
  return {
    view: run.view,
    events: [...run.events, ...journals.flatMap((j) => j.events)].sort(bySeq),
    unreadable: [...run.unreadable, ...journals.flatMap((j) => j.unreadable)].sort(bySeq),
  };
}

/** The run with its labels and step states ({@link runDetail}); `not-found` as for {@link readRun}. */
export async function readRunDetail(store: EventStore, tenantId: TenantId, sharedRunId: string): Promise<RunDetail> {
  const { view, events, unreadable } = await readRunWithJournals(store, tenantId, sharedRunId);
  return runDetail(view, events, unreadable);
}
