import { Cron } from "croner";
import { assertNever } from "../contracts/assert-never.ts";
import type { DataOf, DroverEvent, ScheduleSpec } from "../contracts/index.ts";

export type ScheduleEvent = Extract<DroverEvent, { type: `schedule.${string}` }>;

export const isScheduleEvent = (e: DroverEvent): e is ScheduleEvent => e.type.startsWith("schedule.");

/** A schedule event as folded: its stream position and the server's time of it. */
export interface FoldedScheduleEvent {
  readonly seq: number;
  readonly time: Date;
  readonly event: ScheduleEvent;
}

export interface Backfill {
  readonly backfillId: string;
  readonly from: number;
  readonly to: number;
  /** The last nominal time of the range handled (fired or skipped); from − 1 before the first. */
  readonly cursor: number;
}

/** A schedule as its events say (docs/schedules.md). Times are epoch ms. */
export interface ScheduleState {
  readonly status: "none" | "active" | "paused" | "deleted";
  readonly lastSeq: number;
  readonly def?: DataOf<"schedule.created">;
  /** Server time of `created`: an interval schedule's anchor. */
  readonly createdAt: number;
  /** The last regular nominal time handled (fired or skipped), or when the schedule (re)started counting. */
  readonly cursor: number;
  readonly backfills: readonly Backfill[];
}

export const EMPTY_SCHEDULE: ScheduleState = {
  status: "none",
  lastSeq: 0,
  createdAt: 0,
  cursor: 0,
  backfills: [],
};

const ms = (iso: string) => Date.parse(iso);

/** Applies one event; pure. */
export function applySchedule(s: ScheduleState, e: FoldedScheduleEvent): ScheduleState {
  const ev = e.event;
  const at = e.time.getTime();
  const base = { ...s, lastSeq: e.seq };
  switch (ev.type) {
    case "schedule.created":
      return { ...base, status: "active", def: ev.data, createdAt: at, cursor: at };
    case "schedule.paused":
      return s.status === "active" ? { ...base, status: "paused" } : base;
    case "schedule.resumed":
      // Fires that fell in the pause are not caught up: counting restarts at the resume.
      return s.status === "paused" ? { ...base, status: "active", cursor: Math.max(s.cursor, at) } : base;
    case "schedule.deleted":
      return { ...base, status: "deleted" };
    case "schedule.backfill-requested": {
      const b = { backfillId: ev.data.backfillId, from: ms(ev.data.from), to: ms(ev.data.to) };
      return { ...base, backfills: [...s.backfills, { ...b, cursor: b.from - 1 }] };
    }
    case "schedule.fired": {
      const n = ms(ev.data.nominalAt);
      return ev.data.backfillId === undefined
        ? { ...base, cursor: Math.max(s.cursor, n) }
        : { ...base, backfills: advance(s.backfills, ev.data.backfillId, n) };
    }
    case "schedule.skipped": {
      const last = ms(ev.data.lastNominalAt ?? ev.data.nominalAt);
      return ev.data.backfillId === undefined
        ? { ...base, cursor: Math.max(s.cursor, last) }
        : { ...base, backfills: advance(s.backfills, ev.data.backfillId, last) };
    }
    default:
      return assertNever(ev);
  }
}

const advance = (bs: readonly Backfill[], id: string, n: number): Backfill[] =>
  bs.map((b) => (b.backfillId === id ? { ...b, cursor: Math.max(b.cursor, n) } : b));

export const foldSchedule = (events: readonly FoldedScheduleEvent[]): ScheduleState =>
  events.reduce(applySchedule, EMPTY_SCHEDULE);

/**
 * The first nominal time strictly after `afterMs` (undefined: never again). Interval schedules
 * count from `anchorMs`; cron schedules are read in their time zone. Throws on an invalid
 * expression or zone (checkSpec says which).
 */
export function nextNominal(spec: ScheduleSpec, afterMs: number, anchorMs: number): number | undefined {
  if ("intervalMs" in spec) {
    const k = Math.max(0, Math.floor((afterMs - anchorMs) / spec.intervalMs) + 1);
    return anchorMs + k * spec.intervalMs;
  }
  return cronOf(spec.cron, spec.timezone).nextRun(new Date(afterMs))?.getTime();
}

// Parsed expressions, memoised (a parse costs far more than a next-time step; a backfill takes thousands).
const parsed = new Map<string, Cron>();
function cronOf(expr: string, timezone: string): Cron {
  const key = `${timezone} ${expr}`;
  let c = parsed.get(key);
  if (c === undefined) {
    if (parsed.size >= 1000) parsed.clear();
    c = new Cron(expr, { timezone });
    parsed.set(key, c);
  }
  return c;
}

/** Why the spec can never be used, or undefined when it fires at least once after `nowMs`. */
export function checkSpec(spec: ScheduleSpec, nowMs: number): string | undefined {
  try {
    if (nextNominal(spec, nowMs, nowMs) === undefined) return "the expression never fires";
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}
