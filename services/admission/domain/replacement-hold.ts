/**
 * A replacement's slots are for what it replaces (issue 15, P=5 proof; docs/decisions.md). Recovery
 * asks for the replacement of a suspected runtime at the suspicion (`scaleout.requested` with
 * `replaces`), side by side with the kill; it pauses the runtime's executions and requeues their runs
 * only after the fence, up to seconds later. Until then admission knows no resume, and a new run of
 * the tenant took the replacement's one slot first: the resume then waited behind it (1.5–4 s in 7
 * of 10 kills). Decided from the log, not from timing: while the replaced runtime still owes runs
 * of the request's tenant — holds them (admitted, dispatched or started there: not yet requeued) or
 * lost them (requeued by recovery from it and not yet admitted anywhere) — that many of the
 * replacement's places are kept from new work, for at most `REPLACEMENT_HOLD_MS` after the
 * fulfilment (a fence that never succeeds must not keep them for ever). Recovery items (resumes and
 * requeued local runs) are never held back: they are what the places are kept for. A run counts from
 * its placement on the replaced runtime until its `admitted` elsewhere, with no gap at its requeue:
 * counting only the runs held there let a pass that read its recovery items before the requeue was
 * folded and the kept places after it see neither, and place a new run first (session 32).
 */
export const REPLACEMENT_HOLD_MS = 10_000;

/** A fulfilled replacement: the runtime that fulfilled a request made for a lost one, and when. */
export interface Replacement {
  readonly tenantId: string;
  readonly runtimeInstanceId: string;
  readonly replaces: string;
  readonly fulfilledMs: number;
}

/** Whether the replacement may still hold places at `now` (within the bound after its fulfilment). */
export const holdsAt = (r: Replacement, now: number, holdMs = REPLACEMENT_HOLD_MS): boolean =>
  now >= r.fulfilledMs && now - r.fulfilledMs < holdMs;

/**
 * Places of each replacement runtime kept from new work at `now`: per replacement, the runs of its
 * request's tenant the replaced runtime still owes (`heldOn`: held there, or lost there and not placed
 * again), counted once per tenant and replaced runtime.
 */
export function keptForReplaced(
  replacements: Iterable<Replacement>,
  heldOn: (runtimeInstanceId: string, tenantId: string) => number,
  now: number,
  holdMs = REPLACEMENT_HOLD_MS,
): Map<string, number> {
  const kept = new Map<string, number>();
  const seen = new Set<string>();
  for (const r of replacements) {
    if (!holdsAt(r, now, holdMs)) continue;
    const k = `${r.runtimeInstanceId}\u0000${r.replaces}\u0000${r.tenantId}`;
    if (seen.has(k)) continue;
    seen.add(k);
    const n = heldOn(r.replaces, r.tenantId);
    if (n > 0) kept.set(r.runtimeInstanceId, (kept.get(r.runtimeInstanceId) ?? 0) + n);
  }
  return kept;
}

/** The fulfilled replacements still young enough to hold places, by request id (kept in the run index). */
export class ReplacementHolds {
  private readonly byRequest = new Map<string, Replacement>();

  /** `holdMs`: the bound after a fulfilment (a test of placement order sets one no machine can reach). */
  constructor(private readonly holdMs = REPLACEMENT_HOLD_MS) {}

  /** Notes a scale-out request once fulfilled; only a recovery replacement (`replaces`) is kept. */
  note(s: {
    readonly tenantId: string;
    readonly requestId: string;
    readonly replaces?: string;
    readonly runtimeInstanceId?: string;
    readonly endedMs?: number;
  }): void {
    if (s.replaces === undefined || s.runtimeInstanceId === undefined || s.endedMs === undefined) return;
    const { tenantId, runtimeInstanceId, replaces } = s;
    this.byRequest.set(s.requestId, { tenantId, runtimeInstanceId, replaces, fulfilledMs: s.endedMs });
  }

  /** `keptForReplaced` over the replacements noted; those past the bound are dropped. */
  kept(now: number, heldOn: (runtimeInstanceId: string, tenantId: string) => number): Map<string, number> {
    for (const [k, r] of this.byRequest)
      if (now >= r.fulfilledMs && !holdsAt(r, now, this.holdMs)) this.byRequest.delete(k);
    return this.byRequest.size === 0 ? new Map() : keptForReplaced(this.byRequest.values(), heldOn, now, this.holdMs);
  }

  clear(): void {
    this.byRequest.clear();
  }
}
