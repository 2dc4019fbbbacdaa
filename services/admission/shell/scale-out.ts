import {
  DroverError,
  isDroverError,
  ScaleOutRequestId,
  runtimePrefixOf,
  type Reason,
  type TenantSettings,
  type WorkerVersion,
} from "../../../contracts/index.ts";
import { scaleOutDedupeKey, scaleOutRequestData, scaleOutRequestIdOf } from "../../../aggregates/scale-out-plan.ts";
import { envelope } from "../../../platform/envelope.ts";
import { scaleOutRef } from "../../../streams/index.ts";
import { atRuntimeLimit, isQueueStalled, planScaleOut } from "../domain/single-flight.ts";
import type { Placeable } from "./candidates.ts";
import type { AdmissionDeps } from "./deps.ts";
import { appendRunDecision } from "./append-run.ts";
import { timed, type PassProbe } from "./pass-probe.ts";
import type { IndexedRun } from "./run-index.ts";

const GONE = new Set(["suspected", "fenced", "retired"]);

/** A stalled queue re-reads an open request from the log at most this often. */
const RECHECK_MS = 5_000;
/** How many generations one call tries when the index turns out to be behind the log. */
const MAX_TRIES = 8;

/**
 * Single-flight scale-out (admission-and-capacity.md step 5): the dedupe key is control plane +
 * tenant + prefix + reason; the request id is a hash of the key and its generation (how many
 * requests with that key the log holds), so concurrent admissions converge on one request: the
 * append expects the aggregate not to exist. A conflict is read, never assumed: the request's history
 * is folded into the index, and planning starts again from what the log says (an open request is
 * waited for; an ended one counts as history and the next generation is tried). While a request is
 * open, or ended recently, no new one is made. Returns the request id the run should wait on, if any.
 */
export async function requestScaleOut(
  deps: AdmissionDeps,
  tenant: TenantSettings,
  reason: Reason,
  causationId: string,
  candidates: readonly Placeable[],
  queuedSinceMs?: number,
  workerVersion?: WorkerVersion,
): Promise<{ readonly requestId?: ScaleOutRequestId; readonly stalled: boolean }> {
  // Runs pinned to a worker version wait on their own request: a runtime of the current version cannot take them.
  const dedupeKey = scaleOutDedupeKey(deps.config.controlPlaneId, tenant, reason.code, workerVersion);
  const now = deps.env.clock.now().getTime();
  const open = () =>
    [...deps.index.scaleOuts.values()].find(
      (s) => s.dedupeKey === dedupeKey && (s.status === "requested" || s.status === "observed"),
    );
  const stalled = isQueueStalled(queuedSinceMs, open(), now, deps.config.queueStallMs);
  if (stalled) {
    // Re-plan from the log, not from the index: re-read every request of the key the index holds open.
    for (const s of deps.index.scaleOuts.values()) {
      if (s.dedupeKey !== dedupeKey || (s.status !== "requested" && s.status !== "observed")) continue;
      if (now - (s.recheckedMs ?? 0) < RECHECK_MS) continue;
      s.recheckedMs = now;
      deps.index.resetScaleOut(
        s.tenantId,
        s.requestId,
        (await deps.store.read(scaleOutRef(s.tenantId, s.requestId))).events,
      );
    }
  }
  const requestId = await nextRequest(deps, tenant, reason, causationId, candidates, dedupeKey, now, workerVersion);
  return requestId ? { requestId, stalled } : { stalled };
}

async function nextRequest(
  deps: AdmissionDeps,
  tenant: TenantSettings,
  reason: Reason,
  causationId: string,
  candidates: readonly Placeable[],
  dedupeKey: string,
  now: number,
  workerVersion: WorkerVersion | undefined,
): Promise<ScaleOutRequestId | undefined> {
  const gone = new Set<string>(candidates.filter((c) => GONE.has(c.status)).map((c) => c.runtimeInstanceId));
  // Retired runtimes are not among the candidates (the pass reads live ones): a fulfilled request's
  // runtime missing there is looked up, so a retired one still counts as gone.
  const seen = new Set<string>(candidates.map((c) => c.runtimeInstanceId));
  for (const s of deps.index.scaleOuts.values()) {
    const id = s.runtimeInstanceId;
    if (s.dedupeKey !== dedupeKey || id === undefined || seen.has(id)) continue;
    if ((await deps.view.get(id))?.status === "retired") gone.add(id);
  }
  const idOf = (generation: number) => scaleOutRequestIdOf(deps.sha256, dedupeKey, generation);
  let floor = 0;
  for (let attempt = 1; attempt <= MAX_TRIES; attempt++) {
    const mine = [...deps.index.scaleOuts.values()]
      .filter((s) => s.dedupeKey === dedupeKey)
      .map((s) => ({ ...s, runtimeGone: s.runtimeInstanceId !== undefined && gone.has(s.runtimeInstanceId) }));
    const plan = planScaleOut(mine, now, deps.config.heartbeatIntervalMs, tenant.maxRuntimeInstances);
    // The index keys requests by their subject token; the id crosses into decisions parsed.
    if (plan.kind === "wait-for") return ScaleOutRequestId.parse(plan.requestId);
    if (plan.kind === "hold") return undefined;
    // At the limit in admission's own view: the provisioner would only reject the request (see atRuntimeLimit).
    if (atRuntimeLimit(candidates, runtimePrefixOf(tenant), tenant.maxRuntimeInstances)) return undefined;
    // An id the index already holds is history (ended, or the plan would wait for it): never reused.
    let generation = Math.max(plan.generation, floor);
    while (deps.index.scaleOuts.has(idOf(generation))) generation++;
    const requestId = idOf(generation);
    const event = envelope(
      deps.env,
      "scaleout.requested",
      scaleOutRequestData(deps.config, tenant, requestId, dedupeKey, reason, now, workerVersion),
      {
        tenantId: tenant.tenantId,
        correlationId: requestId,
        causationId,
      },
    );
    const ref = scaleOutRef(tenant.tenantId, requestId);
    try {
      const a = await deps.store.append(ref, event, { expectedSeq: 0 });
      deps.index.resetScaleOut(tenant.tenantId, requestId, [{ seq: a.seq, time: new Date(now), event }]);
      return requestId;
    } catch (e) {
      if (!isDroverError(e, "version-conflict")) throw e;
    }
    // The request exists: another replica made it just now, or the index is behind the log. Look,
    // fold what is there, and plan again: an open request is waited for, an ended one is history.
    const found = deps.index.resetScaleOut(tenant.tenantId, requestId, (await deps.store.read(ref)).events);
    if (found?.dedupeKey !== dedupeKey) {
      throw new DroverError("contract-violation", `scale-out request ${requestId} exists with another dedupe key`);
    }
    floor = generation + 1;
  }
  deps.log.warn({ tenant: tenant.tenantId, dedupeKey }, "scale-out generations kept colliding; retried next pass");
  return undefined;
}

/**
 * Queues a run that found no place (`no-visible-capacity`, or queue-stalled when its queue waited
 * too long with no request in progress) waiting on the tenant's single-flight scale-out request
 * (`requestScaleOut`); answers the reason code and the request waited on, for the pass budget.
 */
export async function queueWithScaleOut(
  deps: AdmissionDeps,
  r: IndexedRun,
  tenant: TenantSettings,
  candidates: Placeable[],
  now: number,
  noCapacity: Reason,
  probe?: PassProbe,
): Promise<[code: string, requestId?: string]> {
  const { requestId, stalled } = await timed(
    probe,
    "scale-out",
    requestScaleOut(
      deps,
      tenant,
      { code: "no-visible-capacity", detail: "" },
      r.sharedRunId,
      candidates,
      r.queuedSinceMs,
      r.state.workerVersion,
    ),
  );
  if (stalled) {
    // Said once per run and request (what the log records too): a run already queue-stalled on the
    // same request is re-planned quietly (the metric still counts each re-plan).
    const again =
      r.state.lastReason === "queue-stalled" &&
      (requestId === undefined || r.state.scaleOutRequestIds.includes(requestId));
    if (!again) deps.log.warn({ tenant: r.tenantId, run: r.sharedRunId, requestId }, "queue stalled; re-planned");
    deps.onQueueStalled?.(r.tenantId);
  }
  const reason = stalled
    ? {
        code: "queue-stalled" as const,
        detail:
          `queued ${now - r.queuedSinceMs!} ms with no visible capacity and no scale-out in progress; re-planned from the log: ${
            requestId ? `waiting on ${requestId}` : "no scale-out request can be made now"
          }. ${noCapacity.detail}`.slice(0, 2000),
      }
    : noCapacity;
  const queued = { kind: "QueueGlobally", reason, ...(requestId ? { scaleOutRequestId: requestId } : {}) } as const;
  await timed(probe, "append-queued", appendRunDecision(deps, r, queued, `queue:${r.sharedRunId}`));
  return requestId ? [reason.code, requestId] : [reason.code];
}
