import { quotaDecision } from "../domain/quota.ts";
import type { Reason, TenantSettings } from "../../../contracts/index.ts";
import type { AdmissionDeps } from "./deps.ts";
import type { IndexedRun } from "./run-index.ts";

/**
 * The tenant quota across admission replicas (platform/tenant-claims.ts): a run the replica's own
 * count lets through claims its place in Redis, where every replica's in-progress placements and
 * decisions its fold has not reached yet count too. Answers the decision to record when the tenant
 * is full across replicas (`tenant-quota-exceeded`, queued or rejected as `overQuota` says), or
 * undefined: the run may be placed, and `settleQuota` must follow. Recovery items never claim: they
 * counted before the crash. Without claims configured (one replica), the local count is the quota.
 */
export async function claimQuota(
  deps: AdmissionDeps,
  r: IndexedRun,
  tenant: TenantSettings,
  now: number,
): Promise<{ readonly kind: "reject" | "queue"; readonly reason: Reason } | undefined> {
  if (!deps.claims || r.state.recoveryPending) return undefined;
  const folded = deps.index.activeCount(r.tenantId);
  const c = await deps.claims.claim(
    r.tenantId,
    r.sharedRunId,
    tenant.maxConcurrentRuns,
    folded,
    deps.index.foldedSeq,
    now,
  );
  if (c.ok) return undefined;
  const d = quotaDecision(tenant, c.count, r.state);
  if (d.kind === "ok") return undefined;
  return { kind: d.kind, reason: { ...d.reason, detail: `${d.reason.detail} across admission replicas` } };
}

/** After a placement attempt: confirms the claim at the decision's sequence, or releases it. */
export async function settleQuota(deps: AdmissionDeps, r: IndexedRun, placed: boolean, now: number): Promise<void> {
  if (!deps.claims || r.state.recoveryPending) return;
  if (placed) await deps.claims.confirm(r.tenantId, r.sharedRunId, r.state.lastSeq, now);
  else await deps.claims.release(r.tenantId, r.sharedRunId);
}
