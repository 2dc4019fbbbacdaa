import { requiredStepKinds } from "../../../contracts/index.ts";
import { isPlaceable } from "../domain/run-decider.ts";
import { TenantQueues } from "../domain/tenant-queues.ts";
import type { IndexedRun } from "./run-index.ts";

/**
 * What a bucket of a tenant's queue holds: runs needing the same step kinds (they see the same
 * runtimes, so a tenant is blocked per step-kind set) and, for runs already queued, the reason and
 * the scale-out request they were last queued with. A pass skips a bucket whole when its tenant is
 * blocked for exactly that reason and request (pass-budget.ts): those runs would be queued again as
 * they are. New submissions (never queued) are never skipped: each gets its queue decision recorded.
 */
export interface RunBucket {
  readonly kindsKey: string;
  readonly queued?: { readonly reason: string; readonly requestId?: string };
}

/** The step kinds a run's DAG needs, joined (cached on the run: its DAG never changes). */
export const kindsKeyOf = (r: IndexedRun): string =>
  (r.kindsKey ??= r.state.dag ? requiredStepKinds(r.state.dag).join(",") : "");

/**
 * The runs admission has something to do for, split as a pass reads them: new work (placeable, not
 * a recovery item) in per-tenant fair queues, pulled lazily in fair order; placements awaiting
 * confirmation (admitted or dispatched, no cancel) in `placed`, which need something only once
 * they are stale (seconds: placement.ts `placementInFlight`), so a pass reads them at most every
 * so often, not each time (in a burst they are every run in flight, and passes follow each other);
 * everything else (recovery items, cancels, invalid submissions) in `side`, read whole by every
 * pass: these are bounded by the runs placed, not by the backlog.
 */
export class PendingWork {
  readonly all = new Set<IndexedRun>();
  readonly side = new Set<IndexedRun>();
  readonly placed = new Set<IndexedRun>();
  readonly queues = new TenantQueues<IndexedRun, RunBucket>();
  /** Told of each new submission queued as new work (the running pass may take it up: placer.ts). */
  onSubmitted?: (tenantId: string) => void;

  update(r: IndexedRun, pending: boolean): void {
    if (!pending) return this.remove(r);
    this.all.add(r);
    const s = r.state;
    const awaiting =
      (s.status === "admitted" || s.status === "dispatched") && s.placement && !s.cancelRequested && !r.invalid;
    if (awaiting) {
      this.queues.place(r, undefined);
      this.side.delete(r);
      this.placed.add(r);
      return;
    }
    this.placed.delete(r);
    if (!isPlaceable(s) || s.recoveryPending || r.invalid) {
      this.queues.place(r, undefined);
      this.side.add(r);
      return;
    }
    this.side.delete(r);
    const kindsKey = kindsKeyOf(r);
    const requestId = s.scaleOutRequestIds.at(-1);
    const queued =
      s.status === "queued" ? { reason: s.lastReason ?? "", ...(requestId ? { requestId } : {}) } : undefined;
    this.queues.place(r, {
      tenantId: r.tenantId,
      bucket: queued ? `${kindsKey}\u0000${queued.reason}\u0000${queued.requestId ?? ""}` : `${kindsKey}\u0000new`,
      info: queued ? { kindsKey, queued } : { kindsKey },
      priority: s.priority ?? 0,
      seq: r.sinceSeq,
      id: r.sharedRunId,
    });
    if (s.status === "submitted") this.onSubmitted?.(r.tenantId);
  }

  remove(r: IndexedRun): void {
    this.all.delete(r);
    this.side.delete(r);
    this.placed.delete(r);
    this.queues.place(r, undefined);
  }

  clear(): void {
    this.all.clear();
    this.side.clear();
    this.placed.clear();
    this.queues.clear();
  }
}
