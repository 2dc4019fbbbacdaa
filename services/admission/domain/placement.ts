import { requiredStepKinds, type Reason, type TenantSettings } from "../../../contracts/index.ts";
import type { RunState } from "../../../aggregates/run.ts";
import { quotaDecision } from "./quota.ts";
import { rankCandidates, whyNoCandidate, type Candidate } from "./ranking.ts";
import { offeringEveryKind, stepKindQueueReason } from "./step-kinds.ts";
import { currentWorkerVersion, runnableByVersion } from "../../../aggregates/capacity/worker-version.ts";

/** What admission knows of one run when it decides (the index entry, without IO). */
export interface PlacementRun {
  readonly state: RunState;
  /** A `submitted` that failed validation: the run is to be rejected. */
  readonly invalid?: { readonly seq: number; readonly error: string };
  /** Server time (ms) the run last changed. */
  readonly sinceMs: number;
  /** When admission last asked the runtime about a dispatched-but-not-started placement. */
  readonly checkedMs?: number;
}

export interface PlacementPolicy {
  readonly tenant: TenantSettings;
  readonly dispatchTimeoutMs: number;
  /** The tenant's placements held (admitted, dispatched, started) plus those in flight in this pass. */
  readonly activeRuns: number;
  /** The version of the tenant's last `worker.deployed` (docs/worker-versions.md "Deploys as events"): current when present. */
  readonly deployedVersion?: string;
}

/** How many ranked candidates a placement records (the `admitted` event's snapshot). */
export const CANDIDATE_SNAPSHOT = 8;

/** One explicit outcome per run and pass; the shell executes it. */
export type Placement<C extends Candidate & { readonly endpoint?: string }> =
  | { readonly kind: "reject-invalid" }
  | { readonly kind: "wait"; readonly why: string }
  | { readonly kind: "finish-dispatch"; readonly target?: C }
  | { readonly kind: "check-dispatched"; readonly target: C }
  | { readonly kind: "reject" | "queue"; readonly reason: Reason }
  | {
      readonly kind: "place";
      /** Reserve a slot on these in order; the first that has one gets the run. */
      readonly tryInOrder: readonly C[];
      /** If every one is full, the run queues with `noCapacityReason` and asks for a scale-out. */
      readonly snapshot: readonly { runtimeInstanceId: string; rank: number; why: string }[];
    }
  | { readonly kind: "queue-with-scale-out"; readonly reason: Reason };

/**
 * Why a run waits, is placed, is queued with a scale-out, is re-dispatched or is rejected (pure).
 * - An invalid submission is rejected.
 * - A placement older than 2 × dispatchTimeoutMs that never moved is finished by whoever looks:
 *   admitted-not-dispatched is dispatched to its runtime; dispatched-not-started is checked with the
 *   runtime (at most once per 2 × dispatchTimeoutMs) and re-sent if unknown there.
 * - The tenant quota holds new work (recovery items are exempt).
 * - After dispatch failures the run backs off exponentially (100 ms × 2^n, at most 10 s) and avoids
 *   the runtime that last refused it while another is eligible.
 * - Only runtimes of the run's worker version are candidates (worker-version.ts): the version it is
 *   pinned to once started, else the tenant's current one (its last deploy, `deployedVersion`, when
 *   recorded: with no runtime of it yet, a new run queues with a scale-out, which starts the
 *   provisioner's current build); runtimes without a worker always are.
 * - Only runtimes offering every step kind of the DAG are candidates (step-kinds.ts); when eligible
 *   runtimes exist but none offers them, the run queues with `step-kind-unavailable`.
 * - Otherwise the ranked candidates are tried in order; with none, the run queues with a scale-out.
 */
export function decidePlacement<C extends Candidate & { readonly endpoint?: string }>(
  run: PlacementRun,
  candidates: readonly C[],
  now: number,
  policy: PlacementPolicy,
): Placement<C> {
  const s = run.state;
  if (run.invalid && s.status === "none") return { kind: "reject-invalid" };
  const placedOn = (id: string) => candidates.find((c) => c.runtimeInstanceId === id);
  const inFlight = placementInFlight(run, now, policy.dispatchTimeoutMs);
  if (inFlight) return { kind: "wait", why: inFlight };
  if (s.status === "admitted" && s.placement) {
    const target = placedOn(s.placement.runtimeInstanceId);
    return target ? { kind: "finish-dispatch", target } : { kind: "finish-dispatch" };
  }
  if (s.status === "dispatched" && s.placement) {
    const target = placedOn(s.placement.runtimeInstanceId);
    return target?.endpoint !== undefined
      ? { kind: "check-dispatched", target }
      : { kind: "wait", why: "dispatched to a runtime with no endpoint; health decides" };
  }
  const quota = quotaDecision(policy.tenant, policy.activeRuns, s);
  if (quota.kind !== "ok") return { kind: quota.kind, reason: quota.reason };
  if (s.dispatchFailures > 0 && now - run.sinceMs < Math.min(10_000, 100 * 2 ** s.dispatchFailures)) {
    return { kind: "wait", why: `backing off after ${s.dispatchFailures} dispatch failures` };
  }
  const required = s.dag ? requiredStepKinds(s.dag) : [];
  const current = s.workerVersion
    ? undefined
    : currentWorkerVersion(candidates, policy.tenant.tenantId, policy.deployedVersion);
  const ofVersion = runnableByVersion(candidates, s.workerVersion, current);
  const ranked = rankCandidates(offeringEveryKind(ofVersion, required).offering, policy.tenant);
  if (ranked.length === 0) {
    const eligible = rankCandidates(ofVersion, policy.tenant).map((x) => x.candidate);
    const why = (
      (s.workerVersion
        ? `pinned to worker version ${s.workerVersion.slice(0, 12)}, which no eligible runtime runs; `
        : current !== undefined && !candidates.some((c) => c.worker?.version === current && !c.worker.pinned)
          ? `the deployed worker version ${current.slice(0, 12)} runs on no runtime yet; `
          : "") + whyNoCandidate(ofVersion, policy.tenant)
    ).slice(0, 2000);
    const reason = stepKindQueueReason(eligible, required) ?? { code: "no-visible-capacity" as const, detail: why };
    return { kind: "queue-with-scale-out", reason };
  }
  const fresh = ranked.filter((x) => x.candidate.runtimeInstanceId !== s.lastFailedRuntimeId);
  return {
    kind: "place",
    tryInOrder: (fresh.length > 0 ? fresh : ranked).map((x) => x.candidate),
    snapshot: ranked
      .slice(0, CANDIDATE_SNAPSHOT)
      .map((x) => ({ runtimeInstanceId: x.candidate.runtimeInstanceId, rank: x.rank, why: x.why })),
  };
}

/**
 * Why an admitted or dispatched placement needs nothing now (pure; the first rule of
 * decidePlacement, which a pass also applies before reading anything else of the run): younger than
 * 2 × dispatchTimeoutMs, or, dispatched, checked with its runtime less than that long ago.
 */
export function placementInFlight(run: PlacementRun, now: number, dispatchTimeoutMs: number): string | undefined {
  const s = run.state;
  const staleAfter = 2 * dispatchTimeoutMs;
  const stale = now - run.sinceMs > staleAfter;
  if (s.status === "admitted" && s.placement && !stale) return "admitted; its dispatch is in flight";
  if (s.status === "dispatched" && s.placement && (!stale || now - (run.checkedMs ?? 0) < staleAfter))
    return "dispatched; not stale";
  return undefined;
}

/** The reason a run queues when nothing visible to its tenant can take it (computed only then: it lists runtimes). */
export const noCapacityReason = (candidates: readonly Candidate[], tenant: TenantSettings): Reason => ({
  code: "no-visible-capacity",
  detail: whyNoCandidate(candidates, tenant).slice(0, 2000),
});
