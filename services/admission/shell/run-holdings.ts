import type { RunState } from "../../../aggregates/run.ts";

const ACTIVE = new Set(["admitted", "dispatched", "started"]);

/** Whether the run holds a placement (admitted, dispatched, started): it counts for its tenant's quota. */
export const isActive = (s: RunState): boolean => ACTIVE.has(s.status);

/**
 * What a run counts for on runtimes (run-index.ts keeps these as runs change):
 * - `held`: the runtime it holds a place on (admitted, dispatched or started there);
 * - `lost`: the runtime it was lost with (`lostOn`, from recovery's `requeued-for-resume` or
 *   `requeued-for-local-queued-recovery`) while it waits as a recovery item, not placed again.
 * A run moves from `held` on a dead runtime to `lost` on it in one fold (the requeue), and from
 * `lost` to `held` on another runtime in one fold (its `admitted`): at no moment is it in neither.
 */
export function holdingOf(
  s: RunState,
  lostOn: string | undefined,
): { readonly runtimeInstanceId: string; readonly lost: boolean } | undefined {
  if (isActive(s) && s.placement) return { runtimeInstanceId: s.placement.runtimeInstanceId, lost: false };
  if (s.recoveryPending && !s.placement && lostOn !== undefined) return { runtimeInstanceId: lostOn, lost: true };
  return undefined;
}

type Counts = Map<string, Map<string, number>>;

/** Runtime → tenant → runs held there, and runs lost with it and not placed again. */
export class RunHoldings {
  private readonly held: Counts = new Map();
  private readonly lost: Counts = new Map();

  /** Moves a run of `tenantId` from where `before` counted to where `after` counts. */
  move(tenantId: string, before: ReturnType<typeof holdingOf>, after: ReturnType<typeof holdingOf>): void {
    if (before) bump(before.lost ? this.lost : this.held, before.runtimeInstanceId, tenantId, -1);
    if (after) bump(after.lost ? this.lost : this.held, after.runtimeInstanceId, tenantId, 1);
  }

  /** Runs of the tenant holding a placement on the runtime (admitted, dispatched, started). */
  heldOn(runtimeInstanceId: string, tenantId: string): number {
    return this.held.get(runtimeInstanceId)?.get(tenantId) ?? 0;
  }

  /** Runs of the tenant the runtime still holds or lost and that are not placed again (replacement-hold.ts). */
  owedBy(runtimeInstanceId: string, tenantId: string): number {
    return this.heldOn(runtimeInstanceId, tenantId) + (this.lost.get(runtimeInstanceId)?.get(tenantId) ?? 0);
  }

  clear(): void {
    this.held.clear();
    this.lost.clear();
  }
}

function bump(m: Counts, runtimeInstanceId: string, tenantId: string, delta: number): void {
  const byTenant = m.get(runtimeInstanceId) ?? new Map<string, number>();
  const n = (byTenant.get(tenantId) ?? 0) + delta;
  if (n > 0) byTenant.set(tenantId, n);
  else byTenant.delete(tenantId);
  if (byTenant.size > 0) m.set(runtimeInstanceId, byTenant);
  else m.delete(runtimeInstanceId);
}
