import { foldRun, isTerminal } from "../../../aggregates/run.ts";
import type { ScheduleStep } from "../../../aggregates/schedule-plan.ts";
import { buildEvent, isDroverError, ScheduleId, SharedRunId, type DroverEvent } from "../../../contracts/index.ts";
import { envelope, type EnvelopeContext } from "../../../platform/envelope.ts";
import { submissionIds } from "../../../platform/submission-ids.ts";
import type { BatchEntry, EventStore } from "../../../streams/index.ts";
import { aggregateWildcard, runRef, scheduleRef, type StreamLayout } from "../../../streams/index.ts";
import type { Entry } from "./book.ts";

export interface ActDeps {
  readonly store: EventStore;
  readonly layout: StreamLayout;
  readonly env: EnvelopeContext;
}

/** What an action did: appended (wait for the fold to see `seq`), or lost a race (wait for the fold to move). */
export type Acted = { readonly appended: number } | { readonly conflict: true };

const iso = (t: number) => new Date(t).toISOString();

/** The idempotency key of the run a fire starts: (schedule, nominal time), so no replica or restart starts it twice. */
export const fireKey = (scheduleId: string, nominalAt: number): string => `schedule:${scheduleId}:${iso(nominalAt)}`;

/**
 * Carries out one planned step of `e` with a conditional append on the schedule (its last
 * sequence as folded): a skip alone; a fire atomically with its run's `submitted` (expected
 * sequence 0) and, for cancel-previous, the previous run's `cancel-requested`. A conflict on the
 * schedule means another replica acted first; a conflict on the run alone means a run for this
 * nominal time exists already (a backfill over fires that happened): recorded as a skip.
 */
export async function act(deps: ActDeps, e: Entry, step: ScheduleStep): Promise<Acted | undefined> {
  const state = e.state; // as planned: the fold may move while this awaits
  const ref = scheduleRef(e.tenantId, e.scheduleId);
  const origin = { tenantId: e.tenantId, correlationId: e.scheduleId, causationId: `schedule:${e.scheduleId}` };
  const schedEv = (events: DroverEvent[]): BatchEntry => ({ ref, expectedSeq: state.lastSeq, events });
  if (step.kind === "skip") return append(deps, [schedEv([envelope(deps.env, "schedule.skipped", step.data, origin)])]);
  if (step.kind !== "fire") return undefined;
  const def = state.def!;
  const key = fireKey(e.scheduleId, step.nominalAt);
  const ids = submissionIds(e.tenantId, key, () => deps.env.ids.next("x"));
  const sharedRunId = SharedRunId.parse(ids.sharedRunId);
  const backfillId = step.backfillId === undefined ? {} : { backfillId: ScheduleId.parse(step.backfillId) };
  const nominalAt = iso(step.nominalAt);
  const submitted = buildEvent(
    "run.submitted",
    {
      sharedRunId,
      dag: def.dag,
      idempotencyKey: key,
      source: "schedule",
      labels: def.labels,
      schedule: { scheduleId: def.scheduleId, nominalAt },
      ...(def.input === undefined ? {} : { input: def.input }),
    },
    { ...origin, correlationId: ids.sharedRunId, writer: deps.env.writer },
    { eventId: ids.eventId, now: deps.env.clock.now() },
  );
  const fired = envelope(
    deps.env,
    "schedule.fired",
    {
      nominalAt,
      sharedRunId,
      ...backfillId,
      ...(step.cancel === undefined ? {} : { cancelled: SharedRunId.parse(step.cancel) }),
    },
    origin,
  );
  const skipped = step.thenSkip ? [envelope(deps.env, "schedule.skipped", step.thenSkip, origin)] : [];
  const entries: BatchEntry[] = [
    schedEv([fired, ...skipped]),
    { ref: runRef(e.tenantId, ids.sharedRunId), expectedSeq: 0, events: [submitted] },
  ];
  if (step.cancel !== undefined) {
    const prev = runRef(e.tenantId, step.cancel);
    const h = await deps.store.read(prev, { skipUndecodable: true });
    const run = foldRun(h.events);
    if (!isTerminal(run.status) && !run.cancelRequested) {
      const by = `schedule:${e.scheduleId}`;
      const reason = `cancel-previous: superseded by ${ids.sharedRunId}`;
      const cancel = envelope(
        deps.env,
        "run.cancel-requested",
        { by, reason },
        { ...origin, correlationId: step.cancel },
      );
      entries.push({ ref: prev, expectedSeq: h.lastSeq, events: [cancel] });
    }
  }
  const r = await append(deps, entries);
  // Only the new run's expectation failed: a run for this nominal time exists.
  if (!("stale" in r) || r.stale.join() !== aggregateWildcard(deps.layout, entries[1]!.ref)) return r;
  const data = { nominalAt, reason: "already-started" as const, count: 1, ...backfillId };
  return append(deps, [schedEv([envelope(deps.env, "schedule.skipped", data, origin)])]);
}

async function append(
  deps: ActDeps,
  entries: BatchEntry[],
): Promise<{ appended: number } | { conflict: true; stale: string[] }> {
  try {
    // One aggregate: a plain conditional append (an atomic batch of one message is never answered).
    const only = entries.length === 1 ? entries[0]! : undefined;
    const acks = only
      ? await deps.store.appendAll(only.ref, only.events, { expectedSeq: only.expectedSeq })
      : await deps.store.appendAtomic(entries);
    return { appended: acks.at(-1)!.seq };
  } catch (err) {
    if (!isDroverError(err, "version-conflict")) throw err;
    const stale = Array.isArray(err.details?.stale) ? err.details.stale : [];
    return { conflict: true, stale: stale.map((x: { subject?: unknown }) => String(x.subject)) };
  }
}
