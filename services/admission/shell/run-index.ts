import type { Clock } from "../../../platform/clock.ts";
import type { JsMsg } from "@nats-io/jetstream";
import { decodeEvent, isDroverError, type DroverEvent } from "../../../contracts/index.ts";
import { evolveRun, initialRunState, isTerminal, type RunEvent, type RunState } from "../../../aggregates/run.ts";
import { isPlaceable } from "../domain/run-decider.ts";
import { submissionSubjectMismatch } from "../domain/submission-check.ts";

/** One run as admission tracks it. */
export interface IndexedRun {
  readonly tenantId: string;
  readonly sharedRunId: string;
  state: RunState;
  /** Stream sequence and server time at which the run last changed (FIFO order, staleness). */
  sinceSeq: number;
  sinceMs: number;
  /** A `submitted` that failed validation (trusted producers publish straight to JetStream). */
  invalid?: { readonly seq: number; readonly error: string };
  /** Set when admission gave up on an invalid submission it cannot reject (its subject holds no valid ids). */
  abandoned?: boolean;
  /** When admission last asked the runtime about a dispatched-but-not-started placement. */
  checkedMs?: number;
  /** Server time the run entered the global queue (kept while it stays queued, whatever the reason). */
  queuedSinceMs?: number;
  /** The step kinds its DAG needs, joined (cached: runs needing the same kinds see the same runtimes). */
  kindsKey?: string;
  /** Server time of the run's submission (for the submission → dispatch latency). */
  submittedMs?: number;
}

export interface ScaleOutEntry {
  readonly tenantId: string;
  readonly requestId: string;
  dedupeKey?: string;
  status: string;
  endedMs?: number;
  /** When the liveness guard last re-read this request from the log. */
  recheckedMs?: number;
  /** The request's own expiry (its `expiresAt`): an open request past it is not progress. */
  expiresMs?: number;
  runtimeInstanceId?: string;
  /** Stream sequence of the last event folded (a redelivery or an event read back twice is a no-op). */
  lastSeq: number;
}

const ACTIVE = new Set(["admitted", "dispatched", "started"]);

/**
 * Admission's in-memory index of every run and scale-out request, folded live from
 * `<prefix>.run.>` and `<prefix>.scaleout.>` (rebuilt from sequence 1 on start: the log is the
 * truth). Admission's own appends are applied at once (`applyOwn`), the follower's later delivery
 * of the same sequences is a no-op (the run fold is idempotent by sequence).
 */
export class RunIndex {
  readonly runs = new Map<string, IndexedRun>();
  // Kept as runs change, so a pass costs O(pending) and a quota check O(1), not O(every run ever seen).
  private readonly pendingRuns = new Set<IndexedRun>();
  private readonly active = new Map<string, number>();
  // Runtime → tenant → runs it holds there (admitted, dispatched, started): the shared-runtime headroom.
  private readonly held = new Map<string, Map<string, number>>();
  readonly scaleOuts = new Map<string, ScaleOutEntry>();
  private readonly listeners = new Set<() => void>();
  /** Called when a run becomes `dispatched`, with the time since its submission (metrics; unset during replay). */
  onDispatched?: (run: IndexedRun, sinceSubmissionMs: number) => void;

  constructor(
    private readonly eventPrefix: string,
    private readonly onInvalid: (subject: string, seq: number, error: string) => void,
    /** Stands in for the server's timestamp when a message has none, and times admission's own appends. */
    private readonly clock: Clock,
  ) {}

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Applies a message from the follower; an invalid `submitted` is recorded (to be rejected), any other invalid event reported. */
  apply(m: Pick<JsMsg, "subject" | "seq" | "data"> & { readonly info?: Pick<JsMsg["info"], "timestampNanos"> }): void {
    const [agg, tenantId, id, name] = m.subject.slice(this.eventPrefix.length + 1).split(".");
    const ms = m.info?.timestampNanos ? Math.floor(Number(m.info.timestampNanos) / 1e6) : this.clock.now().getTime();
    let event: DroverEvent;
    try {
      event = decodeEvent(m.data, { seq: m.seq, subject: m.subject });
    } catch (e) {
      this.invalid(m, agg, tenantId, id, name, ms, isDroverError(e) ? e.message : String(e));
      return;
    }
    const mismatch =
      event.type === "run.submitted" && agg === "run" && tenantId && id
        ? submissionSubjectMismatch({ tenantId, sharedRunId: id }, event)
        : undefined;
    if (mismatch) this.invalid(m, agg, tenantId, id, name, ms, `${mismatch} (stream sequence ${m.seq})`);
    else if (agg === "run" && tenantId && id) this.applyRun(tenantId, id, event as RunEvent, m.seq, ms);
    else if (agg === "scaleout" && tenantId && id) this.applyScaleOut(tenantId, id, event, m.seq, ms);
  }

  /**
   * Replaces what the index holds of a scale-out request with the fold of its whole history as read
   * from the log (its own first append, or the history found behind a version conflict or by the
   * liveness guard), so the index holds what the log says, never what was assumed.
   */
  resetScaleOut(
    tenantId: string,
    requestId: string,
    history: readonly { readonly seq: number; readonly time: Date; readonly event: DroverEvent }[],
  ): ScaleOutEntry | undefined {
    const recheckedMs = this.scaleOuts.get(requestId)?.recheckedMs;
    this.scaleOuts.delete(requestId);
    for (const e of history) this.applyScaleOut(tenantId, requestId, e.event, e.seq, e.time.getTime());
    const entry = this.scaleOuts.get(requestId);
    if (entry && recheckedMs !== undefined) entry.recheckedMs = recheckedMs;
    return entry;
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
    return [...this.pendingRuns];
  }

  /** Runs of the tenant currently holding a placement (for the tenant-wide quota). */
  activeCount(tenantId: string): number {
    return this.active.get(tenantId) ?? 0;
  }

  /** Runs of the tenant holding a placement on the runtime (admitted, dispatched, started). */
  heldOn(runtimeInstanceId: string, tenantId: string): number {
    return this.held.get(runtimeInstanceId)?.get(tenantId) ?? 0;
  }

  /** Admission gave up on an invalid submission it cannot reject: it is no longer pending. */
  abandon(r: IndexedRun): void {
    r.abandoned = true;
    this.pendingRuns.delete(r);
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
      const r = this.entry(tenantId, id);
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

  private applyRun(tenantId: string, id: string, event: RunEvent, seq: number, ms: number): void {
    const r = this.entry(tenantId, id);
    const before = r.state;
    r.state = evolveRun(r.state, event, seq);
    if (r.state !== before) {
      r.sinceSeq = seq;
      r.sinceMs = ms;
      if (before.status === "none") r.submittedMs = ms;
      if (r.state.status === "dispatched" && before.status !== "dispatched" && r.submittedMs !== undefined)
        this.onDispatched?.(r, Math.max(0, ms - r.submittedMs));
      if (r.state.status !== "queued") r.queuedSinceMs = undefined;
      else if (before.status !== "queued") r.queuedSinceMs = ms;
      if (isTerminal(r.state.status)) r.invalid = undefined;
      this.track(r, before);
      this.changed();
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
    }
    if (event.type === "scaleout.fulfilled") s.runtimeInstanceId = event.data.runtimeInstanceId;
    // observed may arrive after a terminal event only through redelivery; status never moves back.
    if (s.endedMs !== undefined) return;
    s.status = name;
    if (name !== "requested" && name !== "observed") s.endedMs = ms;
    this.scaleOuts.set(requestId, s);
    this.changed();
  }

  /** Keeps the pending set and the active counts true for `r`, whose state was `before`. */
  private track(r: IndexedRun, before: RunState): void {
    const delta = Number(ACTIVE.has(r.state.status)) - Number(ACTIVE.has(before.status));
    if (delta !== 0) this.active.set(r.tenantId, (this.active.get(r.tenantId) ?? 0) + delta);
    if (ACTIVE.has(before.status) && before.placement) this.hold(before.placement.runtimeInstanceId, r.tenantId, -1);
    if (ACTIVE.has(r.state.status) && r.state.placement) this.hold(r.state.placement.runtimeInstanceId, r.tenantId, 1);
    const pending =
      !r.abandoned &&
      ((r.invalid !== undefined && r.state.status === "none") ||
        isPlaceable(r.state) ||
        (r.state.cancelRequested !== undefined && !isTerminal(r.state.status)) ||
        r.state.status === "admitted" ||
        r.state.status === "dispatched");
    if (pending) this.pendingRuns.add(r);
    else this.pendingRuns.delete(r);
  }

  private hold(runtimeInstanceId: string, tenantId: string, delta: number): void {
    const m = this.held.get(runtimeInstanceId) ?? new Map<string, number>();
    const n = (m.get(tenantId) ?? 0) + delta;
    if (n > 0) m.set(tenantId, n);
    else m.delete(tenantId);
    if (m.size > 0) this.held.set(runtimeInstanceId, m);
    else this.held.delete(runtimeInstanceId);
  }

  private entry(tenantId: string, sharedRunId: string): IndexedRun {
    const key = `${tenantId}/${sharedRunId}`;
    let r = this.runs.get(key);
    if (!r) {
      r = { tenantId, sharedRunId, state: initialRunState(), sinceSeq: 0, sinceMs: 0 };
      this.runs.set(key, r);
    }
    return r;
  }

  private changed(): void {
    for (const fn of this.listeners) fn();
  }
}
