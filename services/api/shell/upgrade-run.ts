import { foldRun } from "../../../aggregates/run.ts";
import type { TenantId, WorkerVersion } from "../../../contracts/index.ts";
import { decideUpgrade, type UpgradeDecision, type UpgradeRuntime } from "../domain/upgrade.ts";
import type { ApiDeps } from "./deps.ts";
import { deployedVersion } from "../../../platform/worker-deploys.ts";
import { decideOnRun } from "./run-append.ts";
import { readRunDetail } from "./run-queries.ts";

/** The tenant runtimes' registrations, as the upgrade decision reads them (the capacity fold's, every lifecycle). */
async function registeredRuntimes(deps: ApiDeps): Promise<UpgradeRuntime[]> {
  return (await deps.capacity.descriptors()).flatMap((d) => {
    const reg = d.registration;
    if (!reg?.tenantId) return [];
    return [
      {
        runtimeInstanceId: d.runtimeInstanceId,
        tenantId: reg.tenantId,
        status: d.status,
        ...(reg.worker ? { worker: reg.worker } : {}),
        ...(reg.stepKinds ? { stepKinds: reg.stepKinds } : {}),
      },
    ];
  });
}

/**
 * `POST /v1/runs/:id/upgrade` (docs/worker-versions.md "Upgrade"): decides on the run's current
 * events, its journal's settled steps and the tenant's runtime registrations, then appends
 * `run.upgraded` conditionally on the run's last sequence. A version conflict means the run moved
 * meanwhile (it started, a step settled, it ended, another upgrade landed): everything is read
 * again and the decision taken again (a few times, then the conflict is answered, retryable).
 * The read is the tenant's own subjects: another tenant's run is `not-found`.
 */
export async function upgradeRun(
  deps: ApiDeps,
  tenantId: TenantId,
  sharedRunId: string,
  target: WorkerVersion | undefined,
  by: string,
  requestId: string,
): Promise<UpgradeDecision> {
  return decideOnRun<UpgradeDecision, "run.upgraded">(deps, tenantId, sharedRunId, requestId, async (history) => {
    const detail = await readRunDetail(deps.store, tenantId, sharedRunId); // not-found for another tenant's run
    // Without a version: the tenant's last deploy when recorded (docs/worker-versions.md), else the deployedAt rule.
    const to = target ?? (await deployedVersion(deps.store, tenantId));
    const decision = decideUpgrade(foldRun(history.events), detail.steps, await registeredRuntimes(deps), to);
    if (decision.outcome !== "upgrade") return { answer: decision };
    const { fromVersion, toVersion, kinds } = decision;
    return {
      append: { type: "run.upgraded", data: { fromVersion, toVersion, kinds: [...kinds], by } },
      answer: () => decision,
    };
  });
}
