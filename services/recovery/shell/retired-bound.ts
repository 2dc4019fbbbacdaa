import type { RuntimeRecord } from "../domain/runtime-health.ts";
import type { ForensicsRecord } from "./state.ts";

const COMPLETED = "forensics.execution-recovery-completed";

/**
 * A runtime no recovery pass can act on again: no fence pending (suspected and not fenced), no
 * reconcile pending (fenced or stopped and not planned), never to be suspected again (fenced,
 * retired or a claimed pool member: `suspicion` returns nothing for those), not counted live by
 * the fence-storm cap, and its incident's items all completed (a record not in memory was dropped,
 * and only completed ones are).
 */
export function runtimeDone(rt: RuntimeRecord, forensics: ReadonlyMap<string, ForensicsRecord>): boolean {
  if (rt.suspected && !rt.fenced) return false;
  if ((rt.fenced || rt.stopped) && !rt.planned) return false;
  if (!rt.fenced && !rt.retired && !rt.claimed) return false;
  // Still one of the live runtimes the fence-storm cap's share counts (domain/suspicion-budget.ts).
  if (rt.published && rt.host && !rt.retired && !rt.planned) return false;
  return (rt.plannedItemIds ?? []).every((id) => forensics.get(id)?.types.has(COMPLETED) ?? true);
}

/**
 * Recovery's bounds on retired runtimes (`DROVER_MAX_ENDED_RUNTIMES`) and on completed forensics
 * records (`DROVER_MAX_FINISHED_FORENSICS`): beyond each, the ones that finished first leave memory
 * (docs/snapshots.md "Bounded memory (recovery)"). A completed record stays while its runtime is in
 * memory and not planned yet (the plan lists every record of the incident). A runtime event of an
 * unknown runtime after a drop that is not a runtime's first event may be a dropped one coming back:
 * it is `unverified` (no pass acts on it) until its history is read from the log (`verifyRuntimes`).
 */
export class RetiredBound {
  maxRuntimes?: number;
  maxForensics?: number;
  droppedRuntimes = 0;
  droppedForensics = 0;
  /** Runtimes to read from the log before any decision about them. */
  readonly unverified = new Set<string>();
  private readonly done = new Set<string>();
  private readonly completed = new Set<string>();

  constructor(
    private readonly runtimes: Map<string, RuntimeRecord>,
    private readonly forensics: Map<string, ForensicsRecord>,
    private readonly lastBeatMs: Map<string, number>,
    private readonly drainingBeatMs: Map<string, number> = new Map(),
  ) {}

  /** Done runtimes and completed records in memory, in the order they finished (snapshots keep it). */
  order(): { readonly doneRuntimes: string[]; readonly completedForensics: string[] } {
    return { doneRuntimes: [...this.done], completedForensics: [...this.completed] };
  }

  /** After a runtime event: whether `id` was unknown before it, and whether the event is a runtime's first. */
  runtimeChanged(id: string, wasUnknown: boolean, first: boolean): void {
    if (wasUnknown && !first && this.droppedRuntimes > 0) this.unverified.add(id);
    this.check(id);
  }

  /** After a forensics record changed: a completed record, and its runtime, may now leave. */
  forensicsChanged(f: ForensicsRecord): void {
    if (f.types.has(COMPLETED) && !this.completed.has(f.forensicsId)) this.completed.add(f.forensicsId);
    if (f.item) this.check(f.item.failedRuntimeInstanceId);
    this.evict();
  }

  /** Rebuilds the derived sets after a restore (the finishing order from the snapshot). */
  rebuild(
    o: { readonly doneRuntimes?: readonly string[]; readonly completedForensics?: readonly string[] },
    counts: {
      readonly droppedRuntimes?: number;
      readonly droppedForensics?: number;
      readonly unverified?: readonly string[];
    },
  ): void {
    this.done.clear();
    this.completed.clear();
    this.unverified.clear();
    this.droppedRuntimes = counts.droppedRuntimes ?? 0;
    this.droppedForensics = counts.droppedForensics ?? 0;
    for (const id of counts.unverified ?? []) this.unverified.add(id);
    for (const id of o.completedForensics ?? []) if (this.forensics.has(id)) this.completed.add(id);
    for (const f of this.forensics.values()) this.forensicsChanged(f);
    for (const id of o.doneRuntimes ?? []) this.check(id);
    for (const id of this.runtimes.keys()) this.check(id);
    this.evict();
  }

  private check(id: string): void {
    const rt = this.runtimes.get(id);
    if (!rt || this.done.has(id) || this.unverified.has(id) || !runtimeDone(rt, this.forensics)) return;
    this.done.add(id);
    this.evict();
  }

  private evict(): void {
    if (this.maxRuntimes !== undefined)
      for (const id of this.done) {
        if (this.done.size <= this.maxRuntimes) break;
        this.done.delete(id);
        const rt = this.runtimes.get(id);
        // Checked again: a late event may have made it actionable (then it is no longer done).
        if (!rt || !runtimeDone(rt, this.forensics)) continue;
        this.runtimes.delete(id);
        this.lastBeatMs.delete(id);
        this.drainingBeatMs.delete(id);
        this.droppedRuntimes++;
      }
    if (this.maxForensics !== undefined)
      for (const id of this.completed) {
        if (this.completed.size <= this.maxForensics) break;
        const f = this.forensics.get(id);
        const rt = f?.item && this.runtimes.get(f.item.failedRuntimeInstanceId);
        if (rt && !rt.planned) continue;
        this.completed.delete(id);
        this.forensics.delete(id);
        this.droppedForensics++;
      }
  }
}
