import type { Clock } from "../../../platform/clock.ts";
import { DagMemo, decodeEvent, isDroverError, type DroverEvent } from "../../../contracts/index.ts";
import {
  evolveRun,
  initialRunState,
  isTerminal,
  withoutPayload,
  type RunEvent,
  type RunState,
} from "../../../aggregates/run.ts";
import { isPlaceable } from "../domain/run-decider.ts";
import { movedAlongPlacement } from "../domain/placement-path.ts";
import { PendingWork } from "./pending-work.ts";
import { ReplacementHolds } from "../domain/replacement-hold.ts";
import { holdingOf, isActive, RunHoldings } from "./run-holdings.ts";
import { submissionSubjectMismatch } from "../domain/submission-check.ts";
import { firstByExpectation } from "../../../streams/first-by-expectation.ts";
import {
  decodeRunIndex,
  encodeRunIndex,
  RUN_INDEX_KIND,
  type IndexedRunImage,
  type RunIndexImage,
} from "../domain/index-image.ts";
import type { Snapshottable } from "../../../platform/snapshots/snapshotted.ts";
import type { Delivered, IndexedRun, ScaleOutEntry } from "./indexed-run.ts";

export type { IndexedRun, ScaleOutEntry } from "./indexed-run.ts";

/**
 * Admission's in-memory index of every run and scale-out request, folded live from
 * `<prefix>.run.>` and `<prefix>.scaleout.>` (rebuilt from sequence 1 on start: the log is the
 * truth). Admission's own appends are applied at once (`applyOwn`), the follower's later delivery
 * of the same sequences is a no-op (the run fold is idempotent by sequence).
 */
export class RunIndex implements Snapshottable {
  readonly kind = RUN_INDEX_KIND;
  readonly runs = new Map<string, IndexedRun>();
  /**
   * At most this many terminal runs stay in memory (oldest ending first out); undefined: all. A
   * terminal run is never pending, active or held, so dropping it changes no decision; a run seen
   * again after drops is read back from the log before anything is decided for it.
   */
  maxTerminalRuns?: number;
  private readonly terminal = new Map<string, IndexedRun>();
  private readonly unverifiedRuns = new Set<IndexedRun>();
  private evicted = { count: 0, byStatus: new Map<string, number>() };
  private holdDrops = false;
  private folded = 0;
  // Kept as runs change, so a pass costs O(pending) and a quota check O(1), not O(every run ever seen).
  /** Pending runs: new work in per-tenant fair queues (pulled lazily by a pass), the rest aside. */
  readonly work = new PendingWork();
  private readonly active = new Map<string, number>();
  // Runtime → tenant → runs it holds there (the shared-runtime headroom) or lost and not placed again.
  private readonly holdings = new RunHoldings();
  readonly scaleOuts = new Map<string, ScaleOutEntry>();
  /** Fulfilled recovery replacements still young enough to hold places (replacement-hold.ts), by request. */
  private readonly replacing: ReplacementHolds;
  private readonly listeners = new Set<() => void>();
  /** Submissions' DAGs are checked in full, once per distinct DAG (checked-dag.ts `DagMemo`; docs/decisions.md). */
  private readonly dags = new DagMemo();
  /** Called when a run becomes `dispatched`, with the time since its submission (metrics; unset during replay). */
  onDispatched?: (run: IndexedRun, sinceSubmissionMs: number) => void;

  constructor(
    private readonly eventPrefix: string,
    private readonly onInvalid: (subject: string, seq: number, error: string) => void,
    /** Stands in for the server's timestamp when a message has none, and times admission's own appends. */
    private readonly clock: Clock,
    replacementHoldMs?: number, // how long a fulfilled replacement holds places (replacement-hold.ts)
  ) {
    this.replacing = new ReplacementHolds(replacementHoldMs);
  }

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Applies a message from the follower; an invalid `submitted` is recorded (to be rejected), any other invalid event reported. */
  apply(m: Delivered): void {
    if (m.seq > this.folded) this.folded = m.seq;
    const [agg, tenantId, id, name] = m.subject.slice(this.eventPrefix.length + 1).split(".");
    // Already folded (admission's own appends, applied at once by `applyOwn`, come back here): the
    // fold is idempotent by sequence, so the event would change nothing; not decoding it saves the
    // schema check of about half the events admission reads in a burst.
    if (agg === "run" && (this.runs.get(`${tenantId}/${id}`)?.state.lastSeq ?? 0) >= m.seq) return;
    const ms = m.info?.timestampNanos ? Math.floor(Number(m.info.timestampNanos) / 1e6) : this.clock.now().getTime();
    let event: DroverEvent;
    try {
      event = decodeEvent(m.data, { seq: m.seq, subject: m.subject }, this.dags);
    } catch (e) {
      this.invalid(m, agg, tenantId, id, name, ms, isDroverError(e) ? e.message : String(e));
      return;
    }
    const mismatch =
      event.type === "run.submitted" && agg === "run" && tenantId && id
        ? submissionSubjectMismatch({ tenantId, sharedRunId: id }, event)
        : undefined;
    if (mismatch) this.invalid(m, agg, tenantId, id, name, ms, `${mismatch} (stream sequence ${m.seq})`);
    // A `submitted` the server stored only as the run's first is new even after drops: no log read
    // (verify-runs.ts) before a pass may place it (a flood's runs were read one by one, session 28).
    else if (agg === "run" && tenantId && id) {
      const first = name === "submitted" && firstByExpectation(m.headers, m.subject);
      this.applyRun(tenantId, id, event as RunEvent, m.seq, ms, first);
    } else if (agg === "scaleout" && tenantId && id) this.applyScaleOut(tenantId, id, event, m.seq, ms);
  }

  /**
   * Replaces what the index holds of a scale-out request with the fold of its whole history as read
   * from the log (its own first append, or the history found behind a version conflict or by the
   * liveness guard), so the index holds what the log says, never what was assumed. Unless the index
   * went further meanwhile: the follower may fold later events of the request (its end) between the
   * read and this call, and delivers them once; replaced by the older read, the request was open
   * again in the index for good and the key's runs waited on it until its `expiresAt`.
   */
  resetScaleOut(
    tenantId: string,
    requestId: string,
    history: readonly { readonly seq: number; readonly time: Date; readonly event: DroverEvent }[],
  ): ScaleOutEntry | undefined {
    const held = this.scaleOuts.get(requestId);
    if (held && held.lastSeq > (history.at(-1)?.seq ?? 0)) return held;
    this.scaleOuts.delete(requestId);
    for (const e of history) this.applyScaleOut(tenantId, requestId, e.event, e.seq, e.time.getTime());
    const entry = this.scaleOuts.get(requestId);
    if (entry && held?.recheckedMs !== undefined) entry.recheckedMs = held.recheckedMs;
    return entry;
  }

  /**
   * The last stream sequence the follower delivered (not admission's own appends, applied earlier):
   * every decision up to it is in this index, whoever took it (tenant-quota.ts).
   */
  get foldedSeq(): number {
    return this.folded;
  }

  /** Applies an event admission itself appended (read-your-writes before the follower delivers it). */
  applyOwn(tenantId: string, sharedRunId: string, event: DroverEvent, seq: number): void {
    this.applyRun(tenantId, sharedRunId, event as RunEvent, seq, this.clock.now().getTime());
  }

  get(tenantId: string, sharedRunId: string): IndexedRun | undefined {
    return this.runs.get(`${tenantId}/${sharedRunId}`);
  }

  /** Runs admission has something to do for: placeable, invalid submissions, or placements not yet confirmed. */
  pending(): IndexedRun[] {
    return [...this.work.all];
  }

  /** Runs of the tenant currently holding a placement (for the tenant-wide quota). */
  activeCount(tenantId: string): number {
    return this.active.get(tenantId) ?? 0;
  }

  /** Places of each replacement runtime kept from new work at `now` (replacement-hold.ts). */
  keptForReplaced(now: number): Map<string, number> {
    return this.replacing.kept(now, (rt, t) => this.holdings.owedBy(rt, t));
  }

  /** Runs of the tenant holding a placement on the runtime (admitted, dispatched, started). */
  heldOn(runtimeInstanceId: string, tenantId: string): number {
    return this.holdings.heldOn(runtimeInstanceId, tenantId);
  }

  /** Admission gave up on an invalid submission it cannot reject: it is no longer pending. */
  abandon(r: IndexedRun): void {
    r.abandoned = true;
    this.work.remove(r);
  }

  /** Records an invalid `submitted` (to be rejected) and reports any invalid event. */
  private invalid(
    m: { subject: string; seq: number },
    agg?: string,
    tenantId?: string,
    id?: string,
    name?: string,
    ms = 0,
    error = "",
  ): void {
    if (agg === "run" && name === "submitted" && tenantId && id) {
      const r = this.entry(tenantId, id, m.seq);
      if (r.state.status === "none" && !r.invalid) {
        r.invalid = { seq: m.seq, error };
        r.sinceSeq = m.seq;
        r.sinceMs = ms;
        this.track(r, r.state);
        this.changed();
      }
    }
    this.onInvalid(m.subject, m.seq, error);
  }

  private applyRun(tenantId: string, id: string, event: RunEvent, seq: number, ms: number, first = false): void {
    const r = this.entry(tenantId, id, seq, first);
    const before = r.state;
    const lostBefore = r.lostOn;
    r.state = withoutPayload(evolveRun(r.state, event, seq));
    if (r.state !== before) {
      // The runtime a recovery item was lost with: its replacement's places stay kept until it is placed again.
      if (event.type === "run.requeued-for-resume" || event.type === "run.requeued-for-local-queued-recovery")
        r.lostOn = event.data.failedRuntimeInstanceId;
      r.sinceSeq = seq;
      r.sinceMs = ms;
      if (before.status === "none") r.submittedMs = ms;
      if (r.state.status === "dispatched" && before.status !== "dispatched" && r.submittedMs !== undefined)
        this.onDispatched?.(r, Math.max(0, ms - r.submittedMs));
      if (r.state.status !== "queued") r.queuedSinceMs = undefined;
      else if (before.status !== "queued") r.queuedSinceMs = ms;
      if (isTerminal(r.state.status)) r.invalid = undefined;
      this.track(r, before, lostBefore);
      if (isTerminal(r.state.status) && !isTerminal(before.status)) {
        // A terminal run decides nothing whatever its history (a terminal status is final): no log read needed.
        if (r.unverified) this.settle(r);
        this.terminal.set(`${tenantId}/${id}`, r);
        this.evict();
      }
      if (!movedAlongPlacement(before, r.state)) this.changed();
    }
  }

  private applyScaleOut(tenantId: string, requestId: string, event: DroverEvent, seq: number, ms: number): void {
    const s = this.scaleOuts.get(requestId) ?? { tenantId, requestId, status: "requested", lastSeq: 0 };
    if (seq <= s.lastSeq || !event.type.startsWith("scaleout.")) return;
    s.lastSeq = seq;
    const name = event.type.slice("scaleout.".length);
    if (event.type === "scaleout.requested") {
      s.dedupeKey = event.data.dedupeKey;
      s.expiresMs = Date.parse(event.data.expiresAt);
      if (event.data.replaces) s.replaces = event.data.replaces;
    }
    if (event.type === "scaleout.fulfilled") s.runtimeInstanceId = event.data.runtimeInstanceId;
    if (event.type === "scaleout.fulfilled") this.replacing.note({ ...s, endedMs: ms });
    // observed may arrive after a terminal event only through redelivery; status never moves back.
    if (s.endedMs !== undefined) return;
    s.status = name;
    if (name !== "requested" && name !== "observed") s.endedMs = ms;
    this.scaleOuts.set(requestId, s);
    this.changed();
  }

  /** Keeps the pending set, the active counts and the holdings true for `r`, whose state was `before` (lost with `lostBefore`). */
  private track(r: IndexedRun, before: RunState, lostBefore = r.lostOn): void {
    const delta = Number(isActive(r.state)) - Number(isActive(before));
    if (delta !== 0) this.active.set(r.tenantId, (this.active.get(r.tenantId) ?? 0) + delta);
    this.holdings.move(r.tenantId, holdingOf(before, lostBefore), holdingOf(r.state, r.lostOn));
    const pending =
      !r.abandoned &&
      !r.unverified &&
      ((r.invalid !== undefined && r.state.status === "none") ||
        isPlaceable(r.state) ||
        (r.state.cancelRequested !== undefined && !isTerminal(r.state.status)) ||
        r.state.status === "admitted" ||
        r.state.status === "dispatched");
    this.work.update(r, pending);
  }

  /** `first`: the event is known to be the run's first in the log (no read needed after drops). */
  private entry(tenantId: string, sharedRunId: string, seq: number, first = false): IndexedRun {
    const key = `${tenantId}/${sharedRunId}`;
    let r = this.runs.get(key);
    if (!r) {
      r = { tenantId, sharedRunId, state: initialRunState(), sinceSeq: 0, sinceMs: 0 };
      if (this.evicted.count > 0 && !first) {
        r.unverified = true;
        r.firstSeq = seq;
        this.unverifiedRuns.add(r);
      }
      this.runs.set(key, r);
    }
    return r;
  }

  /** Runs first seen after drops, waiting for their history to be read (verify-runs.ts). */
  unverified(): IndexedRun[] {
    return [...this.unverifiedRuns];
  }

  /** An unverified run's first event is its first in the log: it is new and counts from now. */
  markVerified(r: IndexedRun): void {
    this.settle(r);
    this.track(r, r.state);
    this.changed();
  }

  private settle(r: IndexedRun): void {
    r.unverified = undefined;
    r.firstSeq = undefined;
    this.unverifiedRuns.delete(r);
  }

  /** Terminal runs dropped so far, by tenant and status (`tenant\u0000status`): the runs gauge adds them. */
  evictedByStatus(): ReadonlyMap<string, number> {
    return this.evicted.byStatus;
  }

  /**
   * Replaces a run with the fold of its whole history as read from the log: the verdict on an
   * unverified run (new, or one dropped earlier coming back), which is verified from then on.
   */
  resetRun(
    tenantId: string,
    sharedRunId: string,
    history: readonly { readonly seq: number; readonly time: Date; readonly event: DroverEvent }[],
  ): void {
    const key = `${tenantId}/${sharedRunId}`;
    const old = this.runs.get(key);
    if (old) {
      this.forget(old);
      this.runs.delete(key);
    }
    const r: IndexedRun = { tenantId, sharedRunId, state: initialRunState(), sinceSeq: 0, sinceMs: 0 };
    this.runs.set(key, r);
    // The whole history is folded before any drop: a run dropped mid-fold would come back as unknown.
    this.holdDrops = true;
    try {
      for (const e of history) this.applyRun(tenantId, sharedRunId, e.event as RunEvent, e.seq, e.time.getTime());
    } finally {
      this.holdDrops = false;
    }
    if (old?.invalid && r.state.status === "none") r.invalid = old.invalid;
    if (old?.abandoned) r.abandoned = true;
    this.track(r, r.state);
    this.evict();
    this.changed();
  }

  /** Takes `r` out of every derived set (its counts as if it were `none`). */
  private forget(r: IndexedRun): void {
    const state = r.state;
    r.state = initialRunState();
    this.track(r, state);
    r.state = state;
    this.work.remove(r);
    this.unverifiedRuns.delete(r);
    this.terminal.delete(`${r.tenantId}/${r.sharedRunId}`);
  }

  /** Drops the oldest terminal runs beyond the bound (counted per tenant and status for the gauge). */
  private evict(): void {
    if (this.maxTerminalRuns === undefined || this.holdDrops) return;
    for (const [key, r] of this.terminal) {
      if (this.terminal.size <= this.maxTerminalRuns) break;
      this.terminal.delete(key);
      this.runs.delete(key);
      this.work.remove(r);
      this.unverifiedRuns.delete(r);
      this.evicted.count++;
      const k = `${r.tenantId}\u0000${r.state.status}`;
      this.evicted.byStatus.set(k, (this.evicted.byStatus.get(k) ?? 0) + 1);
    }
  }

  /** The index as a snapshot body (platform/snapshots): the runs, scale-outs and drop counts. */
  encode(): Uint8Array {
    const runs: IndexedRunImage[] = [...this.runs.values()];
    return encodeRunIndex({
      runs,
      scaleOuts: [...this.scaleOuts.values()],
      evicted: { count: this.evicted.count, byStatus: [...this.evicted.byStatus] },
    });
  }

  /** Replaces the whole index with a snapshot's (derived sets recomputed from the runs); throws, changing nothing, on a bad body. */
  restore(body: Uint8Array): void {
    const img: RunIndexImage = decodeRunIndex(body);
    for (const m of [this.runs, this.active, this.scaleOuts, this.terminal]) m.clear();
    this.holdings.clear();
    this.replacing.clear();
    this.work.clear();
    this.unverifiedRuns.clear();
    this.evicted = { count: img.evicted.count, byStatus: new Map(img.evicted.byStatus) };
    for (const i of img.runs) {
      const r: IndexedRun = { ...i };
      const key = `${r.tenantId}/${r.sharedRunId}`;
      this.runs.set(key, r);
      if (r.unverified && isTerminal(r.state.status)) this.settle(r);
      if (r.unverified) this.unverifiedRuns.add(r);
      if (isTerminal(r.state.status)) this.terminal.set(key, r);
      this.track(r, initialRunState());
    }
    for (const so of img.scaleOuts) this.scaleOuts.set(so.requestId, { ...so });
    for (const so of img.scaleOuts) if (so.status === "fulfilled") this.replacing.note({ ...so });
    this.evict();
    this.changed();
  }

  private changed(): void {
    for (const fn of this.listeners) fn();
  }
}
