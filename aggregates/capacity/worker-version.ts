import type { RuntimeWorker } from "../../contracts/index.ts";

/** What worker-version decisions read of a runtime (its registration's `worker`, its owner and lifecycle). */
export interface VersionedRuntime {
  readonly runtimeInstanceId: string;
  readonly tenantId?: string;
  readonly status: string;
  readonly worker?: RuntimeWorker;
}

const GONE = new Set(["fenced", "retired"]);

/**
 * The tenant's current worker version (docs/worker-versions.md): the version of its live runtime
 * whose worker was deployed last (`worker.deployedAt`, then the version, so every replica agrees).
 * A runtime started for pinned runs never makes its old version current again: its `deployedAt`
 * is its version's, and it is left out. Undefined: the tenant has no live runtime with a worker.
 * `deployed` (the version of the tenant's last `worker.deployed`, worker-deploys.ts) wins when
 * there is one, whether or not a runtime runs it yet: the recorded deploy is the decision, the
 * `deployedAt` rule only the fallback for tenants never deployed by event.
 */
export function currentWorkerVersion(
  runtimes: readonly VersionedRuntime[],
  tenantId: string,
  deployed?: string,
): string | undefined {
  if (deployed !== undefined) return deployed;
  let best: RuntimeWorker | undefined;
  for (const r of runtimes) {
    const w = r.worker;
    if (!w || w.pinned || r.tenantId !== tenantId || GONE.has(r.status)) continue;
    if (!best || w.deployedAt > best.deployedAt || (w.deployedAt === best.deployedAt && w.version > best.version))
      best = w;
  }
  return best?.version;
}

/**
 * The runtimes a run may be placed on by worker version: a runtime without a worker (built-in kinds
 * only) always passes. A pinned run (`pinned`: the version it started on) goes only to runtimes of
 * that version; a new run only to non-pinned runtimes of the tenant's current version. So a runtime
 * of an old version drains: it takes the runs pinned to it and nothing new.
 */
export function runnableByVersion<C extends VersionedRuntime>(
  candidates: readonly C[],
  pinned: string | undefined,
  current: string | undefined,
): C[] {
  return candidates.filter((c) => {
    if (!c.worker) return true;
    if (pinned !== undefined) return c.worker.version === pinned;
    return !c.worker.pinned && c.worker.version === current;
  });
}

/** Per runtime with a worker: how many runs pinned to its version it holds (placed on it, not ended). */
export interface VersionDrain {
  readonly runtimeInstanceId: string;
  readonly version: string;
  /** True when the runtime takes no new runs: pinned, or not of the tenant's current version. */
  readonly draining: boolean;
  readonly pinnedRuns: number;
  /** Draining with no run left: the provisioner may retire it. */
  readonly retire: boolean;
}

/**
 * The drain state of a tenant's runtimes with a worker: `runsOn` counts the unfinished runs placed on
 * each runtime (`deployed`: as for currentWorkerVersion). A draining runtime with none left is to be retired; the current version's runtimes
 * never are (they take new runs).
 */
export function drainStates(
  runtimes: readonly VersionedRuntime[],
  tenantId: string,
  runsOn: (runtimeInstanceId: string) => number,
  deployed?: string,
): VersionDrain[] {
  const current = currentWorkerVersion(runtimes, tenantId, deployed);
  return runtimes
    .filter((r) => r.worker && r.tenantId === tenantId && !GONE.has(r.status))
    .map((r) => {
      const w = r.worker!;
      const draining = w.pinned || w.version !== current;
      const pinnedRuns = runsOn(r.runtimeInstanceId);
      return {
        runtimeInstanceId: r.runtimeInstanceId,
        version: w.version,
        draining,
        pinnedRuns,
        retire: draining && pinnedRuns === 0,
      };
    });
}
