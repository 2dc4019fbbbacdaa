import type { JsMsg } from "@nats-io/jetstream";
import { evolveRun, initialRunState, isTerminal, type RunEvent, type RunState } from "../../../aggregates/run.ts";
import { applySchedule, EMPTY_SCHEDULE, isScheduleEvent, type ScheduleState } from "../../../aggregates/schedule.ts";
import { decodeEvent, type DroverEvent, type TenantId } from "../../../contracts/index.ts";

/** One schedule as the scheduler holds it: its fold and the runs its fires started that have not ended. */
export interface Entry {
  readonly tenantId: TenantId;
  readonly scheduleId: string;
  state: ScheduleState;
  readonly open: Set<string>;
}

const isRunEvent = (e: DroverEvent): e is RunEvent => e.type.startsWith("run.");

/**
 * The scheduler's view of the log: every schedule's fold, and which runs it started are still
 * open (a `fired` adds its run; the run's own fold, `evolveRun`, decides when it has ended, so a
 * terminal event written by a runtime the run is not placed on ends nothing). Rebuilt from the
 * log at every start; undecodable messages are reported and stepped over (never fatal). A run
 * event of a run no fire started (every run of the API, most of the log) is stepped over by its
 * subject's id token before it is decoded: the scheduler folds only its own runs, and decoding
 * every `run.submitted` DAG to drop it was most of its CPU under load. Folding only the run events
 * of `RUN_END_EVENTS` (all the service is sent) ends a run at the same event as folding them all.
 */
export class ScheduleBook {
  readonly entries = new Map<string, Entry>();
  /** sharedRunId → the schedule key whose fire started it (open runs only). */
  private readonly runOwner = new Map<string, string>();
  /** sharedRunId → the run's fold (open runs started by a fire only). */
  private readonly runs = new Map<string, RunState>();

  constructor(private readonly onInvalid: (subject: string, seq: number, error: string) => void) {}

  apply(m: Pick<JsMsg, "subject" | "seq" | "data" | "info">): void {
    // `<prefix>.run.<tenant>.<sharedRunId>.<event>`
    const tokens = m.subject.split(".");
    if (tokens.at(-4) === "run" && !this.runs.has(tokens.at(-2)!)) return;
    let e;
    try {
      e = decodeEvent(m.data, { seq: m.seq, subject: m.subject });
    } catch (err) {
      this.onInvalid(m.subject, m.seq, (err as Error).message);
      return;
    }
    if (isRunEvent(e)) return this.applyRun(e, m.seq);
    if (!isScheduleEvent(e) || e.tenantId === undefined) return;
    const scheduleId = m.subject.split(".").at(-2)!;
    const key = `${e.tenantId}/${scheduleId}`;
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = { tenantId: e.tenantId, scheduleId, state: EMPTY_SCHEDULE, open: new Set() };
      this.entries.set(key, entry);
    }
    const time = new Date(Math.floor(m.info.timestampNanos / 1e6));
    entry.state = applySchedule(entry.state, { seq: m.seq, time, event: e });
    if (e.type === "schedule.fired") {
      entry.open.add(e.data.sharedRunId);
      this.runOwner.set(e.data.sharedRunId, key);
      this.runs.set(e.data.sharedRunId, initialRunState());
    }
    if (entry.state.status === "deleted") {
      for (const r of entry.open) this.forget(r);
      this.entries.delete(key); // a deleted schedule never acts again (its id is not reused: created needs sequence 0)
    }
  }

  private applyRun(e: RunEvent, seq: number): void {
    const run = this.runs.get(e.correlationId);
    if (run === undefined) return;
    const next = evolveRun(run, e, seq);
    this.runs.set(e.correlationId, next);
    if (!isTerminal(next.status)) return;
    const key = this.runOwner.get(e.correlationId);
    this.forget(e.correlationId);
    if (key !== undefined) this.entries.get(key)?.open.delete(e.correlationId);
  }

  private forget(sharedRunId: string): void {
    this.runOwner.delete(sharedRunId);
    this.runs.delete(sharedRunId);
  }
}
