import type { FairShare } from "../domain/fair-queue.ts";
import { headroomReason, mayTakeSharedPlace } from "../domain/headroom.ts";
import type { Placeable } from "./candidates.ts";
import { kindsKeyOf, type RunBucket } from "./pending-work.ts";
import type { IndexedRun, RunIndex } from "./run-index.ts";

/**
 * What a queued run of a blocked tenant would be queued with again: per reason found this pass, the
 * request it waits on (undefined: none). More than one reason: runs queued less than `queueStallMs`
 * ago are queued again for `no-visible-capacity`, older ones for `queue-stalled`.
 */
type Blocked = Map<string, string | undefined>;

/** How long blocks found by a pass are carried into later ones while no runtime may take the tenant's runs. */
export const CARRY_MS = 1_000;

/**
 * Blocks found by earlier passes (tenant and step kinds → reasons, and when first found), carried
 * into the next pass by `adopt`. Without them each pass looked at its first runs of a blocked
 * tenant again before finding it blocked: under a flood, 8 of its stalled runs per pass, every pass
 * (some 100 `queue stalled; re-planned` a second at 10 000 runs, one run re-planned 223 times).
 */
export type CarriedBlocks = ReadonlyMap<string, { readonly atMs: number; readonly codes: Blocked }>;

/**
 * What one admission pass knows beyond the capacity view it read at its start: places it took
 * (each runtime's free places count down as the pass reserves them), places being claimed by
 * parallel placements (the index counts a tenant's place once its `admitted` is applied), and the
 * tenants found blocked (every runtime they may use is full to them). A blocked tenant's queued
 * runs that would only be queued again for the same reason are skipped without any IO, a whole
 * bucket of them at once (`skipsBucket`, fair-pull.ts), so a pass over a backlog of thousands costs
 * its placements, its state changes and a look at each tenant, not one per queued run.
 */
export class PassBudget {
  private readonly free = new Map<string, number>();
  private readonly claiming = new Map<string, number>();
  private readonly blocked = new Map<string, Blocked>();
  /** When each block was first found (by this pass or, carried, by an earlier one). */
  private readonly foundMs = new Map<string, number>();
  /** Tenants refused a kept place in this pass: another takes one only in its turn against them. */
  private readonly keptRefused = new Set<string>();

  constructor(
    private readonly candidates: readonly Placeable[],
    private readonly index: RunIndex,
    private readonly headroom: number,
    /** How many runs of the tenant wait for a place (its backlog). */
    private readonly waitingOf: (tenantId: string) => number = () => Infinity,
    /** The fair share: a kept place goes to a tenant only in its turn (FairShare.dueAgainst); absent, always. */
    private readonly fair?: Pick<FairShare, "dueAgainst">,
    /** Places of replacement runtimes kept from new work for the runs of what they replace (replacement-hold.ts). */
    private readonly kept: ReadonlyMap<string, number> = new Map(),
  ) {
    for (const c of candidates) this.free.set(c.runtimeInstanceId, c.effectiveAvailableSlots);
  }

  /**
   * The candidates as this tenant may use them now: free places left in this pass, the headroom
   * applied, and (unless `recovery`: a recovery item) a replacement's places kept for what it replaces.
   */
  viewFor(tenantId: string, recovery = false): Placeable[] {
    return this.candidates.map((c) => {
      if (!c.canAcceptRun) return c;
      const free = Math.max(0, this.freeFor(c, recovery));
      if (this.allowed(c, tenantId, recovery))
        return free === c.effectiveAvailableSlots ? c : { ...c, effectiveAvailableSlots: free };
      const why =
        free === 0
          ? this.freeFor(c, true) > 0
            ? "kept-for-replaced"
            : "no-free-slots"
          : headroomReason(this.heldOn(c, tenantId), free, this.headroom, this.waitingOf(tenantId), this.due(tenantId));
      return { ...c, effectiveAvailableSlots: free, canAcceptRun: false, reasons: [...c.reasons, why] };
    });
  }

  /**
   * Applies the blocks an earlier pass found, each for at most CARRY_MS after it was first found,
   * and only while no runtime the pass read may take a run of the tenant at all (every one full or
   * unusable to it): then every placement would fail as it did, and its runs queued for those
   * reasons would be queued again as they are. A runtime with room for the tenant (a place freed, a
   * new runtime) drops the carried block, so the next pass looks again. The expiry bounds what the
   * carry can delay: the move to `queue-stalled` and the scale-out re-plan, by at most CARRY_MS.
   */
  adopt(carried: CarriedBlocks | undefined, now: number): void {
    const roomFor = new Map<string, boolean>();
    for (const [k, { atMs, codes }] of carried ?? []) {
      if (now - atMs >= CARRY_MS || now < atMs) continue;
      const tenantId = k.slice(0, k.indexOf("|"));
      if (!roomFor.has(tenantId))
        roomFor.set(
          tenantId,
          this.viewFor(tenantId).some((c) => c.canAcceptRun),
        );
      if (roomFor.get(tenantId)) continue;
      this.blocked.set(k, new Map(codes));
      this.foundMs.set(k, atMs);
    }
  }

  /** The blocks this pass holds (adopted or found, found at `now`), for the next pass to adopt. */
  carried(now: number): CarriedBlocks {
    return new Map([...this.blocked].map(([k, codes]) => [k, { atMs: this.foundMs.get(k) ?? now, codes }]));
  }

  /** Takes one place of `c` for the tenant if it may still have one (synchronous: parallel placements see it). */
  claim(c: Placeable, tenantId: string, recovery = false): boolean {
    if (!c.canAcceptRun || !this.allowed(c, tenantId, recovery)) return false;
    this.free.set(c.runtimeInstanceId, (this.free.get(c.runtimeInstanceId) ?? 0) - 1);
    this.bump(c.runtimeInstanceId, tenantId, 1);
    return true;
  }

  /** The claim ended: its `admitted` is in the index (or the run went elsewhere). `full`: Redis had no slot. */
  settle(c: Placeable, tenantId: string, full: boolean): void {
    this.bump(c.runtimeInstanceId, tenantId, -1);
    if (full) this.free.set(c.runtimeInstanceId, 0);
  }

  /**
   * The run was queued (again) for `code`: its tenant is blocked for its step kinds, and the tenant's
   * other runs queued for that reason and request would be queued as they are. Every reason found in
   * the pass is kept: keeping only the last one made a flood tenant's two buckets (queued recently,
   * and stalled) unskip each other in turn, and a pass looked at its whole backlog, pair by pair.
   */
  block(r: IndexedRun, code: string, requestId?: string): void {
    const k = blockKey(r);
    const codes = this.blocked.get(k) ?? new Map<string, string | undefined>();
    this.blocked.set(k, codes);
    codes.set(code, requestId);
  }

  /** A queued run whose tenant is blocked and that would be queued again for the same reason: nothing to do. */
  skips(r: IndexedRun): boolean {
    const s = r.state;
    if (s.status !== "queued" || s.cancelRequested || s.recoveryPending || r.invalid) return false;
    return this.blockedFor(blockKey(r), s.lastReason, (id) => (s.scaleOutRequestIds as readonly string[]).includes(id));
  }

  /**
   * Whether a pass skips a whole bucket of the tenant's queue: the tenant is blocked for its step
   * kinds, and its runs were queued for that very reason and request (each would be skipped by `skips`).
   */
  skipsBucket(tenantId: string, b: RunBucket): boolean {
    const q = b.queued;
    return q !== undefined && this.blockedFor(`${tenantId}|${b.kindsKey}`, q.reason, (id) => q.requestId === id);
  }

  /** Whether runs queued for `reason` and waiting on the request (`waitsOn`) would be queued again as they are. */
  private blockedFor(key: string, reason: string | undefined, waitsOn: (requestId: string) => boolean): boolean {
    const codes = this.blocked.get(key);
    if (reason === undefined || !codes?.has(reason)) return false;
    const requestId = codes.get(reason);
    return requestId === undefined || waitsOn(requestId);
  }

  /** Places of `c` left in this pass; new work (not `recovery`) does not count those kept for a replaced runtime's runs. */
  private freeFor(c: Placeable, recovery: boolean): number {
    const free = this.free.get(c.runtimeInstanceId) ?? 0;
    return recovery ? free : free - (this.kept.get(c.runtimeInstanceId) ?? 0);
  }

  private allowed(c: Placeable, tenantId: string, recovery = false): boolean {
    const free = this.freeFor(c, recovery);
    if (c.isolationMode !== "shared") return free > 0;
    const ok = mayTakeSharedPlace(
      this.heldOn(c, tenantId),
      free,
      this.headroom,
      this.waitingOf(tenantId),
      this.due(tenantId),
    );
    if (!ok && free > 0) this.keptRefused.add(tenantId);
    return ok;
  }

  private due(tenantId: string): boolean {
    return this.fair?.dueAgainst(tenantId, this.keptRefused) ?? true;
  }

  private heldOn(c: Placeable, tenantId: string): number {
    return (
      this.index.heldOn(c.runtimeInstanceId, tenantId) + (this.claiming.get(`${c.runtimeInstanceId}/${tenantId}`) ?? 0)
    );
  }

  private bump(rt: string, tenantId: string, d: number): void {
    const k = `${rt}/${tenantId}`;
    this.claiming.set(k, (this.claiming.get(k) ?? 0) + d);
  }
}

/** Runs of one tenant needing the same step kinds see the same runtimes: blocked together. */
const blockKey = (r: IndexedRun): string => `${r.tenantId}|${kindsKeyOf(r)}`;
