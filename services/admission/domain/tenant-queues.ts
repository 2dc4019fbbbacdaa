/** Where a waiting run sits in its tenant's queue (docs/security.md "Floods"). */
export interface QueuePlace<B> {
  readonly tenantId: string;
  /** Runs a blocked tenant skips together share a bucket; `info` describes it (kept from its first run). */
  readonly bucket: string;
  readonly info: B;
  /** As submitted; the tenant's cap applies when runs are pulled (higher first). */
  readonly priority: number;
  /** FIFO within a priority: stream sequence, then run id. */
  readonly seq: number;
  readonly id: string;
}

export interface QueueEntry<T> {
  readonly item: T;
  readonly seq: number;
  readonly id: string;
}

/** Runs of one tenant with the same priority and bucket, oldest first. */
export interface QueueBucket<T, B> {
  readonly info: B;
  readonly priority: number;
  readonly entries: readonly QueueEntry<T>[];
}

interface MutableBucket<T, B> extends QueueBucket<T, B> {
  readonly entries: QueueEntry<T>[];
}

interface Where<B> {
  readonly place: QueuePlace<B>;
  readonly bucketId: string;
}

export const entryBefore = (a: { seq: number; id: string }, b: { seq: number; id: string }): boolean =>
  a.seq < b.seq || (a.seq === b.seq && a.id < b.id);

/** First index in `entries` (sorted) whose entry comes after `at`. */
export function indexAfter<T>(entries: readonly QueueEntry<T>[], at: { seq: number; id: string }): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (entryBefore(at, entries[mid]!)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * Per-tenant queues of waiting runs (pure, kept as runs change, never rebuilt per pass): tenant →
 * buckets (by priority and bucket key) → runs ordered by (seq, id). Moving a run costs O(log n)
 * plus an array splice; a pass reads only the buckets' heads (fair-pull.ts), so its cost does not
 * grow with the backlog.
 */
export class TenantQueues<T, B> {
  private readonly tenants = new Map<string, Map<string, MutableBucket<T, B>>>();
  private readonly where = new Map<T, Where<B>>();
  private maxSeq = 0;

  /** The highest sequence ever placed: a pass takes only runs placed up to it when it began. */
  get lastSeq(): number {
    return this.maxSeq;
  }

  get size(): number {
    return this.where.size;
  }

  /** How many runs of the tenant wait (O(its buckets)). */
  waitingOf(tenantId: string): number {
    let n = 0;
    for (const b of this.tenants.get(tenantId)?.values() ?? []) n += b.entries.length;
    return n;
  }

  has(item: T): boolean {
    return this.where.has(item);
  }

  /** Puts `item` at `at` (moving it if it was elsewhere); undefined takes it out. */
  place(item: T, at: QueuePlace<B> | undefined): void {
    const was = this.where.get(item);
    const bucketId = at && `${at.priority}\u0000${at.bucket}`;
    if (was && at && was.bucketId === bucketId && was.place.seq === at.seq && was.place.tenantId === at.tenantId)
      return;
    if (was) this.remove(item, was);
    if (!at) return;
    const buckets = this.tenants.get(at.tenantId) ?? new Map<string, MutableBucket<T, B>>();
    this.tenants.set(at.tenantId, buckets);
    const b = buckets.get(bucketId!) ?? { info: at.info, priority: at.priority, entries: [] };
    buckets.set(bucketId!, b);
    const entry = { item, seq: at.seq, id: at.id };
    this.maxSeq = Math.max(this.maxSeq, at.seq);
    const last = b.entries.at(-1);
    if (!last || entryBefore(last, entry)) b.entries.push(entry);
    else b.entries.splice(indexAfter(b.entries, entry), 0, entry);
    this.where.set(item, { place: at, bucketId: bucketId! });
  }

  /** Tenants with at least one waiting run. */
  tenantIds(): string[] {
    return [...this.tenants.keys()];
  }

  buckets(tenantId: string): Iterable<QueueBucket<T, B>> {
    return this.tenants.get(tenantId)?.values() ?? [];
  }

  clear(): void {
    this.tenants.clear();
    this.where.clear();
  }

  private remove(item: T, was: Where<B>): void {
    this.where.delete(item);
    const buckets = this.tenants.get(was.place.tenantId);
    const b = buckets?.get(was.bucketId);
    if (!buckets || !b) return;
    const i = indexAfter(b.entries, was.place) - 1;
    if (i >= 0 && b.entries[i]!.item === item) b.entries.splice(i, 1);
    if (b.entries.length > 0) return;
    buckets.delete(was.bucketId);
    if (buckets.size === 0) this.tenants.delete(was.place.tenantId);
  }
}
