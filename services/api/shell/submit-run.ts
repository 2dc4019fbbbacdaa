import { foldRun, type RunState } from "../../../aggregates/run.ts";
import {
  DagMemo,
  isDroverError,
  tenantSettingsOf,
  type ForkOrigin,
  type TenantId,
  type TenantSettings,
} from "../../../contracts/index.ts";
import { aggregateSubject, runRef } from "../../../streams/subjects.ts";
import { decideSubmission, type SubmitRunBody } from "../domain/submission.ts";
import { paceSubmission, submissionRateLimited } from "../domain/submission-pace.ts";
import type { ApiDeps } from "./deps.ts";
import { submissionIds } from "./ids.ts";
import type { Claim } from "./open-runs-projection.ts";
import { readAggregate } from "./run-queries.ts";

/** The outcome of a submission: the run as folded, and whether this request created it. */
export interface Submitted {
  readonly run: RunState;
  readonly created: boolean;
}

/**
 * Submits a run for `tenantId` (taken from the caller's credential by the route):
 * read (when a key names the run) → decide → append `run.submitted` with expected sequence 0.
 *
 * Converges on repeats: the same (tenant, idempotency key) derives the same run and event ids, so
 * a retry either finds the run on the first read, is deduplicated by its msg id, or loses the
 * race with a version conflict; in every case it answers the existing run and no second event is
 * appended. Throws `dag-invalid`, `tenant-quota-exceeded`, `tenant-queue-full`, `submission-rate-limited` (nothing
 * appended) and the store's
 * `event-store-unavailable` (retry the request: it carries the same ids when keyed).
 */
export function createSubmitter(
  deps: ApiDeps,
): (
  tenantId: TenantId,
  body: SubmitRunBody,
  requestId: string,
  rerunOf?: string,
  forkedFrom?: ForkOrigin,
) => Promise<Submitted> {
  // Most runs carry a DAG an earlier submission carried: each distinct DAG is checked once.
  const dags = new DagMemo();
  return (tenantId, body, requestId, rerunOf, forkedFrom) =>
    submitOnce(deps, tenantId, tenantSettingsOf(deps.config, tenantId), body, requestId, rerunOf, forkedFrom, dags);
}

async function submitOnce(
  deps: ApiDeps,
  tenantId: TenantId,
  settings: TenantSettings,
  body: SubmitRunBody,
  requestId: string,
  rerunOf: string | undefined,
  forkedFrom: ForkOrigin | undefined,
  dags: DagMemo,
): Promise<Submitted> {
  const ids = submissionIds(tenantId, body.idempotencyKey, deps.newId);
  const ref = runRef(tenantId, ids.sharedRunId);
  const existing = body.idempotencyKey === undefined ? foldRun([]) : foldRun(await readAggregate(deps.store, ref));
  // The queue cap applies to every tenant whenever the API runs its run projection (main.ts always
  // does); the quota when the tenant's overQuota is `reject`. The claim holds this run's place in
  // both counts until it is appended, so concurrent submissions of this process never overshoot.
  const enforce = settings.overQuota === "reject";
  const claim: Claim | undefined =
    deps.openRuns !== undefined && existing.status === "none"
      ? await deps.openRuns.claim(tenantId, ids.sharedRunId, {
          maxQueuedRuns: settings.maxQueuedRuns,
          ...(enforce ? { maxOpenRuns: settings.maxConcurrentRuns } : {}),
        })
      : undefined;
  let appendedSeq: number | undefined;
  try {
    const [event] = decideSubmission(
      {
        tenantId,
        body,
        settings,
        openRuns: enforce ? claim?.openRuns : undefined,
        queuedRuns: claim?.queuedRuns,
        ...ids,
        metadata: { now: deps.clock.now(), requestId, instanceId: deps.instanceId },
        dags,
        ...(rerunOf === undefined ? {} : { rerunOf }),
        ...(forkedFrom === undefined ? {} : { forkedFrom }),
      },
      existing,
    );
    if (event === undefined) return { run: existing, created: false };
    if (claim !== undefined) pace(deps, tenantId, settings, claim.queuedRuns);
    try {
      // The msg id names this event, not just "first append to the run": a rival submission of the
      // same run (e.g. a producer's) must fail on the sequence check, not be mistaken for ours.
      const a = await deps.store.append(ref, event, {
        expectedSeq: 0,
        msgId: `${aggregateSubject(deps.layout, ref)}:${event.eventId}`,
      });
      appendedSeq = a.seq;
      if (!a.duplicate) return { run: foldRun([{ seq: a.seq, event }]), created: true };
    } catch (e) {
      if (!isDroverError(e, "version-conflict")) throw e;
    }
  } finally {
    claim?.release(appendedSeq);
  }
  const run = foldRun(await readAggregate(deps.store, ref));
  if (run.status === "none") throw new Error(`run ${ids.sharedRunId} conflicted on append but has no submission`);
  return { run, created: false };
}

/** Each API's tenants' theoretical arrival times of the submission pace (in memory, per API replica). */
const paceTats = new WeakMap<ApiDeps, Map<TenantId, number>>();

/** Takes a token of the tenant's submission pace (decided with the queue this submission claimed), or throws `submission-rate-limited`. */
function pace(deps: ApiDeps, tenantId: TenantId, settings: TenantSettings, queuedRuns: number): void {
  const tats = paceTats.get(deps) ?? new Map<TenantId, number>();
  paceTats.set(deps, tats);
  const p = paceSubmission(tats.get(tenantId), queuedRuns, deps.clock.now().getTime(), settings.submissionPace);
  if (!p.ok) throw submissionRateLimited(tenantId, queuedRuns, p.retryAfterMs, settings.submissionPace);
  if (p.tatMs !== undefined) tats.set(tenantId, p.tatMs);
}
