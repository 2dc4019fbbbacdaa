import { foldRun, type RunState } from "../../../aggregates/run.ts";
import { isDroverError, tenantSettingsOf, type TenantId, type TenantSettings } from "../../../contracts/index.ts";
import { aggregateSubject, runRef } from "../../../streams/subjects.ts";
import { decideSubmission, type SubmitRunBody } from "../domain/submission.ts";
import type { ApiDeps } from "./deps.ts";
import { submissionIds } from "./ids.ts";
import { readAggregate } from "./run-queries.ts";
import { serialPerKey } from "./serial.ts";

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
 * appended. Throws `dag-invalid`, `tenant-quota-exceeded`, `tenant-queue-full` (nothing appended) and the store's
 * `event-store-unavailable` (retry the request: it carries the same ids when keyed).
 */
export function createSubmitter(
  deps: ApiDeps,
): (tenantId: TenantId, body: SubmitRunBody, requestId: string, rerunOf?: string) => Promise<Submitted> {
  const serial = serialPerKey();
  return (tenantId, body, requestId, rerunOf) => {
    const settings = tenantSettingsOf(deps.config, tenantId);
    const attempt = () => submitOnce(deps, tenantId, settings, body, requestId, rerunOf);
    // Quota/queue check and append are one step per tenant here, so this process never admits two over the limit.
    return deps.openRuns ? serial(tenantId, attempt) : attempt();
  };
}

async function submitOnce(
  deps: ApiDeps,
  tenantId: TenantId,
  settings: TenantSettings,
  body: SubmitRunBody,
  requestId: string,
  rerunOf: string | undefined,
): Promise<Submitted> {
  const ids = submissionIds(tenantId, body.idempotencyKey, deps.newId);
  const ref = runRef(tenantId, ids.sharedRunId);
  const existing = body.idempotencyKey === undefined ? foldRun([]) : foldRun(await readAggregate(deps.store, ref));
  const enforce = settings.overQuota === "reject" && deps.openRuns !== undefined && existing.status === "none";
  const openRuns = enforce ? await deps.openRuns!.openRuns(tenantId) : undefined;
  // The queue cap applies to every tenant whenever the API runs its run projection (main.ts always does).
  const queuedRuns =
    deps.openRuns !== undefined && existing.status === "none" ? await deps.openRuns.queuedRuns(tenantId) : undefined;
  const [event] = decideSubmission(
    {
      tenantId,
      body,
      settings,
      openRuns,
      queuedRuns,
      ...ids,
      metadata: { now: deps.clock.now(), requestId, instanceId: deps.instanceId },
      ...(rerunOf === undefined ? {} : { rerunOf }),
    },
    existing,
  );
  if (event === undefined) return { run: existing, created: false };
  try {
    // The msg id names this event, not just "first append to the run": a rival submission of the
    // same run (e.g. a producer's) must fail on the sequence check, not be mistaken for ours.
    const appended = await deps.store.append(ref, event, {
      expectedSeq: 0,
      msgId: `${aggregateSubject(deps.layout, ref)}:${event.eventId}`,
    });
    if (!appended.duplicate) return { run: foldRun([{ seq: appended.seq, event }]), created: true };
  } catch (e) {
    if (!isDroverError(e, "version-conflict")) throw e;
  }
  const run = foldRun(await readAggregate(deps.store, ref));
  if (run.status === "none") throw new Error(`run ${ids.sharedRunId} conflicted on append but has no submission`);
  return { run, created: false };
}
