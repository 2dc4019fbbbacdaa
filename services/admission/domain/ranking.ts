import type { RuntimeInstanceId, RuntimeWorker, TenantSettings } from "../../../contracts/index.ts";
import { isOwnedBy, isVisible, type IsolationFacts } from "./visibility.ts";

/** One runtime as admission sees it: isolation facts plus the capacity view's derived numbers. */
export interface Candidate extends IsolationFacts {
  readonly runtimeInstanceId: RuntimeInstanceId;
  readonly canAcceptRun: boolean;
  readonly reasons: readonly string[];
  readonly effectiveAvailableSlots: number;
  readonly availableWorkers: number;
  readonly runningRuns: number;
  readonly queuedRuns: number;
  /** ms since epoch of the latest heartbeat. */
  readonly lastHeartbeatAt: number;
  readonly status: string;
  /** Step kinds the runtime offers (its registration); absent: the built-ins. */
  readonly stepKinds?: readonly string[];
  /** The tenant worker it runs (its registration); absent: none. */
  readonly worker?: RuntimeWorker;
}

export interface RankedCandidate<C extends Candidate = Candidate> {
  readonly candidate: C;
  readonly rank: number;
  readonly why: string;
}

/**
 * Candidates for one run, best first: visible to the run's tenant, can accept, not suspected/fenced;
 * then (when the tenant prefers dedicated capacity) owned before shared; then effective slots desc →
 * available workers desc → running asc → queued asc → latest heartbeat desc → RuntimeInstanceId asc.
 * The order is total, so every replica ranks the same way.
 */
export function rankCandidates<C extends Candidate>(all: readonly C[], tenant: TenantSettings): RankedCandidate<C>[] {
  const eligible = all.filter(
    (c) => c.canAcceptRun && isVisible(c, tenant) && c.status !== "suspected" && c.status !== "fenced",
  );
  const owned = (c: C) => (tenant.preferDedicatedCapacity && isOwnedBy(c, tenant) ? 0 : 1);
  const sorted = [...eligible].sort(
    (a, b) =>
      owned(a) - owned(b) ||
      b.effectiveAvailableSlots - a.effectiveAvailableSlots ||
      b.availableWorkers - a.availableWorkers ||
      a.runningRuns - b.runningRuns ||
      a.queuedRuns - b.queuedRuns ||
      b.lastHeartbeatAt - a.lastHeartbeatAt ||
      (a.runtimeInstanceId < b.runtimeInstanceId ? -1 : a.runtimeInstanceId > b.runtimeInstanceId ? 1 : 0),
  );
  return sorted.map((candidate, rank) => ({
    candidate,
    rank,
    why: `slots=${candidate.effectiveAvailableSlots} workers=${candidate.availableWorkers} running=${candidate.runningRuns} queued=${candidate.queuedRuns}${owned(candidate) === 0 ? " owned" : ""}`,
  }));
}

/** Why nothing is eligible, per runtime the tenant could see (for `queued-globally` and `drover why`). */
export function whyNoCandidate(all: readonly Candidate[], tenant: TenantSettings): string {
  const visible = all.filter((c) => isVisible(c, tenant));
  if (visible.length === 0)
    return `no runtime visible to tenant ${tenant.tenantId} (isolation ${tenant.isolationMode})`;
  return visible
    .slice(0, 5)
    .map((c) => `${c.runtimeInstanceId}: ${c.reasons.join(",") || c.status}`)
    .join("; ");
}
