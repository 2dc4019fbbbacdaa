import type { Candidate } from "../domain/ranking.ts";
import type { IndexedRun } from "./run-index.ts";

/**
 * The tenant's deployed worker version as placement needs it (docs/worker-versions.md "Deploys as
 * events"): read only for a run not yet pinned whose tenant has a candidate running a worker (else
 * "current" filters nothing: a pinned run goes by its pin, and runtimes without a worker are
 * never version-filtered). `read` is the pass's per-tenant cache (platform/worker-deploys.ts), so a
 * pass reads each tenant's deploys at most once and all its decisions agree.
 */
export async function deployedVersionFor(
  read: ((tenantId: string) => Promise<string | undefined>) | undefined,
  r: IndexedRun,
  candidates: readonly Candidate[],
): Promise<string | undefined> {
  if (!read || r.state.workerVersion || r.state.cancelRequested) return undefined;
  if (!candidates.some((c) => c.worker && c.tenantId === r.tenantId)) return undefined;
  return read(r.tenantId);
}
