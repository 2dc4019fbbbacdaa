import { entryBefore, indexAfter, type QueueBucket, type QueueEntry, type TenantQueues } from "./tenant-queues.ts";

export interface PullPolicy<T, B> {
  readonly weightOf: (tenantId: string) => number;
  /** The tenant's virtual start tag when the pass begins (FairShare.startOf). */
  readonly startOf: (tenantId: string) => number;
  /** A run's priority above this counts as this (the tenant's maxRunPriority). */
  readonly priorityCap: (tenantId: string) => number;
  /** True when the pass would only leave every run of the bucket as it is: the bucket is skipped whole. */
  readonly skipsBucket: (tenantId: string, info: B) => boolean;
  /** A run the pass must not take now (a command for it is in flight). */
  readonly excluded: (item: T) => boolean;
}

interface Turn {
  readonly tenantId: string;
  tag: number;
  readonly step: number;
}

const ahead = (a: Turn, b: Turn): boolean => a.tag < b.tag || (a.tag === b.tag && a.tenantId < b.tenantId);

/**
 * The fair order of fairOrder (fair-queue.ts), pulled one run at a time (pure): a heap of tenants
 * on their virtual tags (start tag at the pass's start, + 1 / weight per run pulled; ties: tenant
 * id) and, per tenant, the head of each bucket (priority capped, then FIFO). A bucket the policy
 * skips is skipped whole, and a tenant with nothing left leaves the heap, so pulling k runs costs
 * O(k · (log tenants + buckets · log n)) plus O(tenants) to start, whatever the backlog. Like a
 * snapshot, a pass takes only runs that waited where they are when it began (sequence up to the
 * queues' last then): a run that arrived or moved since waits for the next pass, which orders it
 * with everyone (a pass fed by a flood's arrivals would otherwise never end). A tenant absent from
 * the heap whose tag is ahead of every tenant's in it may `join` the pass when a run of its arrives:
 * it is pulled next, up to what it holds then, instead of waiting for the flood batch the pass is
 * working through — or, once the pull ran dry, for the pass's last placements. A run is never
 * pulled twice in one pass.
 */
export class FairPull<T, B> {
  private readonly heap: Turn[] = [];
  private readonly after = new Map<QueueBucket<T, B>, QueueEntry<T>>();
  private readonly taken = new Set<T>();
  private readonly upTo: number;
  /** Tenants in the heap, and for those that joined mid-pass the sequence they may be pulled up to. */
  private readonly inHeap = new Set<string>();
  private readonly joinedUpTo = new Map<string, number>();
  /** The tags of tenants that left the heap this pass (a tenant joining again resumes from its tag). */
  private readonly leftAt = new Map<string, number>();

  constructor(
    private readonly queues: TenantQueues<T, B>,
    private readonly policy: PullPolicy<T, B>,
  ) {
    this.upTo = queues.lastSeq;
    for (const tenantId of queues.tenantIds())
      this.push({ tenantId, tag: policy.startOf(tenantId), step: 1 / Math.max(1, policy.weightOf(tenantId)) });
  }

  /**
   * A run of `tenantId` arrived while the pass runs: the tenant joins it when it is not in the heap
   * and its tag (its start tag now, or where it left this pass) is ahead of every tenant's there —
   * a tenant under its fair share, the flood's tenant never (it is in the heap, or its tag is not
   * ahead; once the heap is empty, see `joinsDry`). It may then be pulled up to the queues' last
   * sequence now: one more arrival of a flood tenant cannot feed a pass forever, and a quiet
   * tenant's new run is pulled next rather than after the pass. True when it joined.
   */
  join(tenantId: string): boolean {
    if (this.inHeap.has(tenantId)) return false;
    const tag = Math.max(this.policy.startOf(tenantId), this.leftAt.get(tenantId) ?? -Infinity);
    const turn = { tenantId, tag, step: 0 };
    const top = this.heap[0];
    if (top ? !ahead(turn, top) : !this.joinsDry(turn)) return false;
    this.joinedUpTo.set(tenantId, this.queues.lastSeq);
    this.push({ tenantId, tag, step: 1 / Math.max(1, this.policy.weightOf(tenantId)) });
    return true;
  }

  /**
   * The pull ran dry (its last placements may still be in flight): a tenant that took no part in
   * the pass joins if its tag is ahead of where every tenant that did left it — the next pass would
   * order it first too, so its run need not wait for this one's placements. Once per pass: a
   * tenant that took part (a flood's, or one that joined) waits for the next pass, so arrivals
   * cannot keep a dry pass going.
   */
  private joinsDry(turn: Turn): boolean {
    if (this.leftAt.has(turn.tenantId)) return false;
    for (const [tenantId, tag] of this.leftAt) if (!ahead(turn, { tenantId, tag, step: 0 })) return false;
    return true;
  }

  /** The next run in fair order, or undefined when no tenant has one left to take. */
  next(): T | undefined {
    while (this.heap.length > 0) {
      const top = this.heap[0]!;
      const head = this.headOf(top.tenantId);
      if (!head) {
        this.leftAt.set(top.tenantId, top.tag);
        this.pop();
        continue;
      }
      this.after.set(head.bucket, head.entry);
      this.taken.add(head.entry.item);
      top.tag += top.step;
      this.down(0);
      return head.entry.item;
    }
    return undefined;
  }

  private headOf(tenantId: string): { bucket: QueueBucket<T, B>; entry: QueueEntry<T> } | undefined {
    const cap = this.policy.priorityCap(tenantId);
    let best: { bucket: QueueBucket<T, B>; entry: QueueEntry<T>; p: number } | undefined;
    for (const bucket of this.queues.buckets(tenantId)) {
      const p = Math.min(bucket.priority, cap);
      if (best && p < best.p) continue;
      if (this.policy.skipsBucket(tenantId, bucket.info)) continue;
      const entry = this.firstOf(bucket, this.joinedUpTo.get(tenantId) ?? this.upTo);
      if (entry && (!best || p > best.p || entryBefore(entry, best.entry))) best = { bucket, entry, p };
    }
    return best;
  }

  private firstOf(bucket: QueueBucket<T, B>, upTo: number): QueueEntry<T> | undefined {
    const from = this.after.get(bucket);
    const es = bucket.entries;
    for (let i = from ? indexAfter(es, from) : 0; i < es.length; i++) {
      const e = es[i]!;
      if (e.seq > upTo) return undefined; // arrived or moved after the pass began (entries are by seq)
      if (!this.policy.excluded(e.item) && !this.taken.has(e.item)) return e;
      // Passed for the rest of the pass: runs pulled earlier and queued again land here, once each.
      this.after.set(bucket, e);
    }
    return undefined;
  }

  private push(t: Turn): void {
    this.inHeap.add(t.tenantId);
    this.heap.push(t);
    for (let i = this.heap.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (!ahead(this.heap[i]!, this.heap[parent]!)) break;
      [this.heap[i], this.heap[parent]] = [this.heap[parent]!, this.heap[i]!];
      i = parent;
    }
  }

  private pop(): void {
    this.inHeap.delete(this.heap[0]!.tenantId);
    const last = this.heap.pop()!;
    if (this.heap.length === 0) return;
    this.heap[0] = last;
    this.down(0);
  }

  private down(i: number): void {
    const h = this.heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && ahead(h[l]!, h[m]!)) m = l;
      if (r < h.length && ahead(h[r]!, h[m]!)) m = r;
      if (m === i) return;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}
