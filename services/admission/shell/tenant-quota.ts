import { quotaDecision } from "../domain/quota.ts";
import type { Reason, TenantSettings } from "../../../contracts/index.ts";
import type { AdmissionDeps } from "./deps.ts";
import type { TenantClaims } from "../../../platform/tenant-claims.ts";
import type { ReserveOutcome } from "../../../platform/reservations.ts";
import type { IndexedRun } from "./run-index.ts";

/**
 * The tenant quota across admission replicas (platform/tenant-claims.ts): a run the replica's own
 * count lets through claims its place in Redis, where every replica's in-progress placements and
 * decisions its fold has not reached yet count too. Answers the decision to record when the tenant
 * is full across replicas (`tenant-quota-exceeded`, queued or rejected as `overQuota` says), or
 * none: the run may be placed, and `settleQuota` must follow. With `slot`, a granted claim also
 * reserves that slot in the same Redis call (`reserved`: its outcome). Recovery items never claim:
 * they counted before the crash. Without claims configured (one replica), the local count is the quota.
 */
export async function claimQuota(
  deps: AdmissionDeps,
  r: IndexedRun,
  tenant: TenantSettings,
  now: number,
  slot?: Parameters<TenantClaims["claimAndReserve"]>[6],
): Promise<{
  readonly over?: { readonly kind: "reject" | "queue"; readonly reason: Reason };
  readonly reserved?: ReserveOutcome;
}> {
  if (!deps.claims || r.state.recoveryPending) return {};
  const folded = deps.index.activeCount(r.tenantId);
  const args = [r.tenantId, r.sharedRunId, tenant.maxConcurrentRuns, folded, deps.index.foldedSeq, now] as const;
  const c: { readonly ok: boolean; readonly count: number; readonly reserved?: ReserveOutcome } = slot
    ? await deps.claims.claimAndReserve(...args, slot)
    : await deps.claims.claim(...args);
  if (c.ok) return c.reserved ? { reserved: c.reserved } : {};
  const d = quotaDecision(tenant, c.count, r.state);
  if (d.kind === "ok") return {};
  return { over: { kind: d.kind, reason: { ...d.reason, detail: `${d.reason.detail} across admission replicas` } } };
}

/**
 * After a placement attempt: confirms the claim at the decision's sequence (`seq`, else the run's
 * last), or releases it. `recovery` is what the run was when the attempt began (a recovery item made
 * no claim).
 */
export async function settleQuota(
  deps: AdmissionDeps,
  r: IndexedRun,
  placed: boolean,
  now: number,
  recovery: boolean,
  seq?: number,
): Promise<void> {
  if (!deps.claims || recovery) return;
  if (placed) await deps.claims.confirm(r.tenantId, r.sharedRunId, seq ?? r.state.lastSeq, now);
  else await deps.claims.release(r.tenantId, r.sharedRunId);
}
