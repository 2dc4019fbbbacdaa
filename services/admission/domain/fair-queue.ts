/** A run waiting for placement, as the admission queue sees it. */
export interface PendingRun {
  readonly tenantId: string;
  readonly sharedRunId: string;
  /** Recovery items (requeued by recovery) go ahead of new work. */
  readonly recovery: boolean;
  /** Stream sequence at which the run became pending (submission or requeue): FIFO within a tenant. */
  readonly sinceSeq: number;
  /** Higher goes first within the tenant (docs/flow-control.md); absent: 0. */
  readonly priority?: number;
}

/**
 * Weighted fair share of the places of shared runtimes, by virtual time (start-time fair queuing):
 * every placement of a tenant's new work on a shared runtime advances the tenant's tag by
 * 1 / weight, and the next place goes to the tenant with the smallest tag. While tenants flood
 * together their placements are in proportion to their weights, pass after pass (the tags outlive a
 * pass). A tenant left behind keeps at most CREDIT of virtual time (`weight` runs): one blocked for a
 * moment (by a shared runtime's headroom, say) gets its places back in the next passes, while one
 * that was idle or blocked for long goes next but cannot claim every place it did not use. Soft
 * state: an admission restart starts every tenant equal.
 */
const CREDIT = 1;

export class FairShare {
  private now = 0;
  private readonly finish = new Map<string, number>();

  /** The virtual time at which the tenant's next placement starts. */
  startOf(tenantId: string): number {
    return Math.max(this.finish.get(tenantId) ?? this.now, this.now - CREDIT);
  }

  /**
   * Whether it is the tenant's turn against `rivals`: the tenants refused a kept place of a shared
   * runtime in this pass (headroom.ts), whose backlogs wait for places. It is, unless a rival's next
   * placement would start before its own. A place given out of turn would move the clock past the
   * rivals and forgive their lag. With no refused rival a tenant is always due: compared with the
   * clock alone, a tenant alone on a runtime was "ahead" after its first placement and never got a
   * kept place again. (A tolerance for the sums of 1 / weight.)
   */
  dueAgainst(tenantId: string, rivals: Iterable<string>): boolean {
    const start = this.startOf(tenantId);
    for (const u of rivals) if (u !== tenantId && this.startOf(u) < start - 1e-9) return false;
    return true;
  }

  /** One of the tenant's runs took a place on a shared runtime. */
  charge(tenantId: string, weight: number): void {
    const start = this.startOf(tenantId);
    this.finish.set(tenantId, start + 1 / Math.max(1, weight));
    this.now = Math.max(this.now, start);
  }
}

/**
 * The order in which admission tries pending runs, as a specification (pure; admission pulls the
 * same order lazily from per-tenant queues, fair-pull.ts, whose tests check it against this one):
 * every recovery item first (oldest
 * first), then new work by weighted fair share across tenants: the next run is always the oldest
 * of the tenant with the smallest virtual start tag (`startOf`, advanced by 1 / weight for each of
 * its runs earlier in this order; ties: tenant id). So a pass that can place only some of the runs
 * places them as the weights say, and the tenants' placements over many passes are in proportion
 * to their weights (not a round-robin restarted every pass, which gave the first tenant by id every
 * lone place). Within a tenant: higher priority first, then FIFO. Priority never moves a run ahead
 * of another tenant's: the tenants' shares are as before.
 */
export function fairOrder(
  pending: readonly PendingRun[],
  weightOf: (tenantId: string) => number,
  startOf: (tenantId: string) => number = () => 0,
): PendingRun[] {
  const bySeq = (a: PendingRun, b: PendingRun) => a.sinceSeq - b.sinceSeq || (a.sharedRunId < b.sharedRunId ? -1 : 1);
  const byPriority = (a: PendingRun, b: PendingRun) => (b.priority ?? 0) - (a.priority ?? 0) || bySeq(a, b);
  const recovery = pending.filter((p) => p.recovery).sort(bySeq);
  const queues = new Map<string, PendingRun[]>();
  for (const p of pending.filter((x) => !x.recovery).sort(byPriority)) {
    const q = queues.get(p.tenantId) ?? [];
    q.push(p);
    queues.set(p.tenantId, q);
  }
  const tenants = [...queues.keys()]
    .sort()
    .map((t) => ({ t, q: queues.get(t)!, next: 0, tag: startOf(t), step: 1 / Math.max(1, weightOf(t)) }));
  const out: PendingRun[] = [...recovery];
  for (let left = pending.length - recovery.length; left > 0; left--) {
    let best: (typeof tenants)[number] | undefined;
    for (const x of tenants) if (x.next < x.q.length && (!best || x.tag < best.tag)) best = x;
    out.push(best!.q[best!.next++]!);
    best!.tag += best!.step;
  }
  return out;
}
