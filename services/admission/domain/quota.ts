import type { Reason, TenantSettings } from "../../../contracts/index.ts";

export type QuotaDecision = { readonly kind: "ok" } | { readonly kind: "reject" | "queue"; readonly reason: Reason };

/**
 * The tenant-wide quota (admission-and-capacity.md "Backpressure"): a tenant holding
 * `maxConcurrentRuns` placements gets `tenant-quota-exceeded` — rejected at submission when its
 * settings say `overQuota: reject`, else queued. Recovery items are never held back by the quota:
 * they already counted before the crash.
 */
export function quotaDecision(
  tenant: TenantSettings,
  activeRuns: number,
  run: { status: string; recoveryPending: boolean },
): QuotaDecision {
  if (run.recoveryPending || activeRuns < tenant.maxConcurrentRuns) return { kind: "ok" };
  const reason: Reason = {
    code: "tenant-quota-exceeded",
    detail: `tenant ${tenant.tenantId} holds ${activeRuns} of ${tenant.maxConcurrentRuns} active runs`,
  };
  return { kind: tenant.overQuota === "reject" && run.status === "submitted" ? "reject" : "queue", reason };
}
