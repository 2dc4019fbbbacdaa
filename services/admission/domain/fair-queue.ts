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
 * first), then new work by weighted round-robin across tenants — in each round a tenant gets up to
 * `weight` runs, tenants in id order — so one tenant's burst cannot starve another. FIFO within a tenant.
 */
export function fairOrder(pending: readonly PendingRun[], weightOf: (tenantId: string) => number): PendingRun[] {
  const bySeq = (a: PendingRun, b: PendingRun) => a.sinceSeq - b.sinceSeq || (a.sharedRunId < b.sharedRunId ? -1 : 1);
  const recovery = pending.filter((p) => p.recovery).sort(bySeq);
  const queues = new Map<string, PendingRun[]>();
  for (const p of pending.filter((x) => !x.recovery).sort(bySeq)) {
    const q = queues.get(p.tenantId) ?? [];
    q.push(p);
    queues.set(p.tenantId, q);
  }
  const tenants = [...queues.keys()].sort();
  const out: PendingRun[] = [...recovery];
  let left = pending.length - recovery.length;
  while (left > 0) {
    for (const t of tenants) {
      const q = queues.get(t)!;
      const take = q.splice(0, Math.max(1, Math.floor(weightOf(t))));
      out.push(...take);
      left -= take.length;
    }
  }
  return out;
}
