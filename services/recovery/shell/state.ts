import type { JsMsg } from "@nats-io/jetstream";
import {
  decodeEventWithoutPayload,
  ForensicsId,
  RuntimeInstanceId,
  SharedRunId,
  TenantId,
  type DataOf,
  type DroverEvent,
} from "../../../contracts/index.ts";
import { storedHeartbeat } from "../../../streams/index.ts";
import { evolveRun, initialRunState, isTerminal, type RunEvent, type RunState } from "../../../aggregates/run.ts";
import { RunBound } from "./run-bound.ts";
import { RetiredBound } from "./retired-bound.ts";
import { failureTime, type FailureBasis } from "../domain/incident-clock.ts";
import { emptyRuntime, evolveRuntime, type RuntimeEvent, type RuntimeRecord } from "../domain/runtime-health.ts";
import { decodeRecoveryState, encodeRecoveryState, RECOVERY_STATE_KIND } from "../domain/state-image.ts";
import type { Snapshottable } from "../../../platform/snapshots/snapshotted.ts";

/**
 * A run's state without its DAG, input and output, whatever its status: recovery decides from
 * statuses, placements and resume facts (classify.ts, reconcile.ts, timeline.ts), never from those.
 */
const lean = (s: RunState): RunState => {
  if (s.dag === undefined && s.input === undefined && s.output === undefined) return s;
  const { dag: _dag, input: _input, output: _output, ...rest } = s;
  return rest;
};

export interface TrackedRun {
  readonly tenantId: TenantId;
  readonly sharedRunId: SharedRunId;
  state: RunState;
}
export interface ForensicsRecord {
  readonly tenantId: TenantId;
  readonly forensicsId: ForensicsId;
  item?: DataOf<"forensics.execution-recovery-candidate-detected">;
  readonly types: Set<string>;
  lastSeq: number;
}
/** How long after its runtime failed an incident reached a stage (see domain/incident-clock.ts). */
export interface IncidentTiming {
  readonly stage: "fenced" | "resumed";
  readonly basis: FailureBasis;
  readonly ms: number;
}
export interface ExecProgress {
  resumed?: DataOf<"exec.resumed">;
  completedDigest?: string;
  tenantId: string;
}

/**
 * Recovery's view of the log, folded live: every run (inventory comes from here, never from a dead
 * runtime), every runtime's lifecycle, latest heartbeat times, forensics records, and the resume /
 * completion facts of executions. Invalid events are reported, not applied.
 */
export class RecoveryState implements Snapshottable {
  readonly kind = RECOVERY_STATE_KIND;
  readonly runs = new Map<string, TrackedRun>();
  readonly runtimes = new Map<string, RuntimeRecord>();
  readonly lastBeatMs = new Map<string, number>();
  /**
   * Stored time of each runtime's latest heartbeat that said `draining` with nothing running or queued
   * (the end of its own drain: a SIGTERM from outside drover, docs/control-flow.md "Stopping a
   * runtime"). A drain with runs still in it is a live runtime whose silence counts at once: its runs
   * would move late otherwise. Like `lastBeatMs`, heartbeat-derived and not in snapshots: the
   * heartbeat follower delivers each runtime's last beat again after a restart.
   */
  readonly drainingBeatMs = new Map<string, number>();
  readonly forensics = new Map<string, ForensicsRecord>();
  readonly execs = new Map<string, ExecProgress>();
  /** Terminal runs kept in memory at most (RunBound; undefined: all). */
  readonly bound = new RunBound(this.runs);
  /** Retired runtimes and completed forensics records kept in memory at most (RetiredBound; undefined: all). */
  readonly retired = new RetiredBound(this.runtimes, this.forensics, this.lastBeatMs, this.drainingBeatMs);
  private readonly listeners = new Set<() => void>();
  /** Forensics ids whose resume was timed (each is timed once). */
  private readonly timedResumes = new Set<string>();
  /** Told each runtime's fencing and each in-flight execution's resume elsewhere (metrics; unset during replay). */
  onTiming?: (t: IncidentTiming) => void;

  constructor(
    private readonly prefix: string,
    private readonly onInvalid: (subject: string, seq: number, error: string) => void,
    /** Heartbeat subject prefix; default: the event prefix's (`drover` → `drover-hb`). */
    private readonly heartbeatPrefix = `${prefix}-hb`,
  ) {}

  /** The folded state as a snapshot body (platform/snapshots); heartbeat times are not in it. */
  encode(): Uint8Array {
    return encodeRecoveryState({
      runs: [...this.runs.values()],
      runtimes: [...this.runtimes.values()],
      forensics: [...this.forensics.values()].map((f) => ({ ...f, types: [...f.types] })),
      execs: [...this.execs],
      dropped: this.bound.dropped,
      ...this.retired.order(),
      droppedRuntimes: this.retired.droppedRuntimes,
      droppedForensics: this.retired.droppedForensics,
      unverifiedRuntimes: [...this.retired.unverified],
    });
  }

  /** Replaces the folded state with a snapshot's; throws, changing nothing, on a bad body. */
  restore(body: Uint8Array): void {
    const img = decodeRecoveryState(body);
    for (const m of [this.runs, this.runtimes, this.forensics, this.execs]) m.clear();
    for (const r of img.runs) this.runs.set(`${r.tenantId}/${r.sharedRunId}`, r as TrackedRun);
    for (const rt of img.runtimes) this.runtimes.set(rt.runtimeInstanceId, rt);
    for (const f of img.forensics)
      this.forensics.set(f.forensicsId, { ...f, types: new Set(f.types) } as unknown as ForensicsRecord);
    for (const [id, x] of img.execs) this.execs.set(id, { ...x });
    this.bound.rebuild(this.forensics.values(), img.dropped);
    this.retired.rebuild(img, {
      ...(img.droppedRuntimes === undefined ? {} : { droppedRuntimes: img.droppedRuntimes }),
      ...(img.droppedForensics === undefined ? {} : { droppedForensics: img.droppedForensics }),
      ...(img.unverifiedRuntimes === undefined ? {} : { unverified: img.unverifiedRuntimes }),
    });
  }

  /**
   * Replaces a runtime's record with the fold of its whole history read from the log (a dropped
   * runtime that came back: RetiredBound), and lets the bound see it again.
   */
  replaceRuntime(id: RuntimeInstanceId, history: readonly { seq: number; time: Date; event: DroverEvent }[]): void {
    let r = emptyRuntime(id);
    for (const h of history) r = evolveRuntime(r, h.event as RuntimeEvent, h.seq, h.time.getTime());
    // The follower folded an event past the read: still unverified, read again next pass.
    if ((this.runtimes.get(id)?.lastSeq ?? 0) > r.lastSeq) return;
    this.runtimes.set(id, r);
    this.retired.unverified.delete(id);
    this.retired.runtimeChanged(id, false, true);
  }

  onChange(fn: () => void): void {
    this.listeners.add(fn);
  }

  apply(m: Pick<JsMsg, "subject" | "seq" | "data" | "info">): void {
    const tokens = m.subject.slice(this.prefix.length + 1).split(".");
    // An execution's `completed` matters only once it resumed (its digest completes the recovery
    // timeline, timeline.ts), and its `resumed` comes before it in its own log: the end of every
    // other execution (one per run) is neither decoded nor kept (issue 15).
    if (tokens[0] === "exec" && tokens[3] === "completed" && !this.execs.has(tokens[2] ?? "")) return;
    const atMs = m.info?.timestampNanos ? Math.floor(Number(m.info.timestampNanos) / 1e6) : Date.now();
    let e: DroverEvent;
    try {
      // No DAG or input is kept here (`lean`), and submissions are not followed (RUN_PLACEMENT_EVENTS): one
      // that is applied all the same (a test, a snapshot's tail) is not validated for them (admission does).
      e = decodeEventWithoutPayload(m.data, { seq: m.seq, subject: m.subject });
    } catch (err) {
      this.onInvalid(m.subject, m.seq, String(err));
      return;
    }
    if (!this.applyEvent(tokens, e, m.seq, atMs)) {
      this.onInvalid(m.subject, m.seq, "the subject's aggregate ids are not valid ids");
      return;
    }
    for (const fn of this.listeners) fn();
  }

  /** Applies an event recovery itself appended, before the follower delivers it. */
  applyOwn(subject: string, e: DroverEvent, seq: number): void {
    this.applyEvent(subject.slice(this.prefix.length + 1).split("."), e, seq, Date.now());
  }

  /**
   * Folds one heartbeat: its runtime is the one its subject names and its time is when the stream
   * stored it (`storedAtMs`, the server's clock), never the writer's `at` (streams/heartbeat-message.ts).
   */
  applyBeat(m: Pick<JsMsg, "data" | "seq" | "subject">, storedAtMs: number): void {
    try {
      const hb = storedHeartbeat(this.heartbeatPrefix, m, storedAtMs);
      const rt = this.runtimes.get(hb.runtimeInstanceId);
      // Only beats of the current incarnation count as proof of life.
      if (rt?.host && rt.host.hostIncarnation !== hb.hostIncarnation) return;
      this.lastBeatMs.set(hb.runtimeInstanceId, Math.max(this.lastBeatMs.get(hb.runtimeInstanceId) ?? 0, storedAtMs));
      // A drain is one-way (a runtime never takes new runs again): its latest idle draining beat is kept.
      if (hb.draining && hb.runningRuns === 0 && hb.queuedRuns === 0)
        this.drainingBeatMs.set(
          hb.runtimeInstanceId,
          Math.max(this.drainingBeatMs.get(hb.runtimeInstanceId) ?? 0, storedAtMs),
        );
    } catch (err) {
      this.onInvalid(m.subject, m.seq, String(err));
    }
  }

  private time(stage: IncidentTiming["stage"], rt: RuntimeRecord, atMs: number): void {
    const failed = this.onTiming && failureTime(rt, this.lastBeatMs.get(rt.runtimeInstanceId));
    if (failed) this.onTiming!({ stage, basis: failed.basis, ms: Math.max(0, atMs - failed.atMs) });
  }

  /** An execution resumed on another runtime than the one whose failure its forensics record names. */
  private timeResume(executionId: string, on: string, atMs: number): void {
    if (!this.onTiming) return;
    for (const f of this.forensics.values()) {
      const item = f.item;
      if (item?.executionId !== executionId || item.failedRuntimeInstanceId === on) continue;
      if (this.timedResumes.has(f.forensicsId)) continue;
      this.timedResumes.add(f.forensicsId);
      const rt = this.runtimes.get(item.failedRuntimeInstanceId);
      if (rt) this.time("resumed", rt, atMs);
    }
  }

  /** Folds one event by its subject's tokens, parsed as ids once here; false when they are not ids (nothing applied). */
  private applyEvent(tokens: string[], e: DroverEvent, seq: number, atMs: number): boolean {
    const [agg, a, b] = tokens;
    if (agg === "run" && a && b) {
      const tenantId = TenantId.safeParse(a);
      const sharedRunId = SharedRunId.safeParse(b);
      if (!tenantId.success || !sharedRunId.success) return false;
      const key = `${a}/${b}`;
      const r = this.runs.get(key) ?? {
        tenantId: tenantId.data,
        sharedRunId: sharedRunId.data,
        state: initialRunState(),
      };
      const wasTerminal = isTerminal(r.state.status);
      r.state = lean(evolveRun(r.state, e as RunEvent, seq));
      this.runs.set(key, r);
      this.bound.runChanged(key, r, wasTerminal);
    } else if (agg === "runtime" && a) {
      const id = RuntimeInstanceId.safeParse(a);
      if (!id.success) return false;
      const before = this.runtimes.get(a);
      const after = evolveRuntime(before ?? emptyRuntime(id.data), e as RuntimeEvent, seq, atMs);
      this.runtimes.set(a, after);
      this.retired.runtimeChanged(
        a,
        !before,
        e.type === "runtime.registered" || e.type === "runtime.pool-member-registered",
      );
      if (!before?.fenced && after.fenced) this.time("fenced", after, atMs);
    } else if (agg === "forensics" && a && b) {
      const tenantId = TenantId.safeParse(a);
      const forensicsId = ForensicsId.safeParse(b);
      if (!tenantId.success || !forensicsId.success) return false;
      const f = this.forensics.get(b) ?? {
        tenantId: tenantId.data,
        forensicsId: forensicsId.data,
        types: new Set<string>(),
        lastSeq: 0,
      };
      if (seq <= f.lastSeq) return true;
      const before = this.forensics.has(b) ? this.bound.openRunOf(f) : undefined;
      f.lastSeq = seq;
      f.types.add(e.type);
      if (e.type === "forensics.execution-recovery-candidate-detected") f.item = e.data;
      this.forensics.set(b, f);
      this.bound.forensicsChanged(before, f);
      this.retired.forensicsChanged(f);
      return true;
    } else if (agg === "exec" && a && b) {
      const x = this.execs.get(b) ?? { tenantId: a };
      if (e.type === "exec.resumed") {
        x.resumed = e.data;
        this.timeResume(b, e.data.runtimeInstanceId, atMs);
      }
      if (e.type === "exec.completed") x.completedDigest = e.data.outputDigest;
      this.execs.set(b, x);
    }
    return true;
  }
}
