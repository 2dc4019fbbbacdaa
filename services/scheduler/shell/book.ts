import type { JsMsg } from "@nats-io/jetstream";
import { applySchedule, EMPTY_SCHEDULE, isScheduleEvent, type ScheduleState } from "../../../aggregates/schedule.ts";
import { decodeEvent, type TenantId } from "../../../contracts/index.ts";

/** One schedule as the scheduler holds it: its fold and the runs its fires started that have not ended. */
export interface Entry {
  readonly tenantId: TenantId;
  readonly scheduleId: string;
  state: ScheduleState;
  readonly open: Set<string>;
}

const ENDED = new Set(["run.completed", "run.failed", "run.cancelled", "run.rejected"]);

/**
 * The scheduler's view of the log: every schedule's fold, and which runs it started are still
 * open (a `fired` adds its run, the run's terminal event removes it). Rebuilt from the log at
 * every start; undecodable messages are reported and stepped over (never fatal).
 */
export class ScheduleBook {
  readonly entries = new Map<string, Entry>();
  /** sharedRunId → the schedule key whose fire started it (open runs only). */
  private readonly runOwner = new Map<string, string>();

  constructor(private readonly onInvalid: (subject: string, seq: number, error: string) => void) {}

  apply(m: Pick<JsMsg, "subject" | "seq" | "data" | "info">): void {
    let e;
    try {
      e = decodeEvent(m.data, { seq: m.seq, subject: m.subject });
    } catch (err) {
      this.onInvalid(m.subject, m.seq, (err as Error).message);
      return;
    }
    if (ENDED.has(e.type)) {
      const key = this.runOwner.get(e.correlationId);
      if (key !== undefined) {
        this.runOwner.delete(e.correlationId);
        this.entries.get(key)?.open.delete(e.correlationId);
      }
      return;
    }
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
    }
    if (entry.state.status === "deleted") {
      for (const r of entry.open) this.runOwner.delete(r);
      this.entries.delete(key); // a deleted schedule never acts again (its id is not reused: created needs sequence 0)
    }
  }
}
