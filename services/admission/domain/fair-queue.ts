/** A run waiting for placement, as the admission queue sees it. */
export interface PendingRun {
  readonly tenantId: string;
  readonly sharedRunId: string;
  /** Recovery items (requeued by recovery) go ahead of new work. */
  readonly recovery: boolean;
  /** Stream sequence at which the run became pending (submission or requeue): FIFO within a tenant. */
  readonly sinceSeq: number;
}

/**
 * The order in which admission tries pending runs (pure): every recovery item first (oldest
 * first), then new work by weighted fair share across tenants: the next run is always the oldest
 * of the tenant with the fewest places per unit of weight — `(held + taken) / weight`, where `held`
 * is what the tenant already holds on shared capacity and `taken` its runs earlier in this order
 * (ties: tenant id). A tenant holding nothing goes ahead of a flood's backlog, and when capacity
 * frees one place at a time, tenants flooding together get places in proportion to their weights
 * (a round-robin restarted every pass would give the first tenant every lone place). FIFO within a tenant.
 */
export function fairOrder(
  pending: readonly PendingRun[],
  weightOf: (tenantId: string) => number,
  heldOf: (tenantId: string) => number = () => 0,
): PendingRun[] {
  const bySeq = (a: PendingRun, b: PendingRun) => a.sinceSeq - b.sinceSeq || (a.sharedRunId < b.sharedRunId ? -1 : 1);
  const recovery = pending.filter((p) => p.recovery).sort(bySeq);
  const queues = new Map<string, PendingRun[]>();
  for (const p of pending.filter((x) => !x.recovery).sort(bySeq)) {
    const q = queues.get(p.tenantId) ?? [];
    q.push(p);
    queues.set(p.tenantId, q);
  }
  const tenants = [...queues.keys()]
    .sort()
    .map((t) => ({ t, q: queues.get(t)!, next: 0, used: heldOf(t), w: Math.max(1, weightOf(t)) }));
  const out: PendingRun[] = [...recovery];
  for (let left = pending.length - recovery.length; left > 0; left--) {
    let best: (typeof tenants)[number] | undefined;
    for (const x of tenants) if (x.next < x.q.length && (!best || x.used / x.w < best.used / best.w)) best = x;
    out.push(best!.q[best!.next++]!);
    best!.used++;
  }
  return out;
}
