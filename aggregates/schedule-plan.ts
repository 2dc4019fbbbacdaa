import type { DataOf } from "../contracts/index.ts";
import { nextNominal, type ScheduleState } from "./schedule.ts";

/** What a scheduler does next for one schedule at a given time (docs/schedules.md "Decisions"). */
export type ScheduleStep =
  | { readonly kind: "idle" }
  | { readonly kind: "wait"; readonly untilMs: number }
  | { readonly kind: "wait-for-run" }
  | { readonly kind: "skip"; readonly data: DataOf<"schedule.skipped"> }
  | {
      readonly kind: "fire";
      readonly nominalAt: number;
      readonly backfillId?: string;
      /** cancel-previous: the run to cancel. */
      readonly cancel?: string;
      /** buffer-one: the later fires that came due meanwhile, skipped with this fire. */
      readonly thenSkip?: DataOf<"schedule.skipped">;
    };

/** Most fires one decision may count past (a per-second schedule after a day's outage is 86 400). */
const MAX_SCAN = 1_000_000;
const iso = (t: number) => new Date(t).toISOString();

/** A deterministic delay in 0..jitterMs for one fire, so every replica computes the same due time. */
export function jitterOf(scheduleId: string, nominalAt: number, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  let h = 2166136261;
  for (const c of `${scheduleId}@${nominalAt}`) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
  return (h >>> 0) % (jitterMs + 1);
}

/**
 * The next step for `s` at `nowMs`, given which of its runs have not ended (`openRuns`). Only an
 * active schedule acts. Backfills go first (all their fires start, whatever the overlap policy); then the regular fire: missed
 * beyond the catch-up window → one `skipped{missed}` for the whole range; a run still open →
 * the overlap policy; else fire. Pure: every replica decides the same from the same log.
 */
export function planSchedule(s: ScheduleState, nowMs: number, openRuns: readonly string[]): ScheduleStep {
  try {
    return plan(s, nowMs, openRuns);
  } catch {
    // A spec the API would have refused (it checks every spec) written by another party: never fires.
    return { kind: "idle" };
  }
}

function plan(s: ScheduleState, nowMs: number, openRuns: readonly string[]): ScheduleStep {
  const def = s.def;
  // Paused (or deleted): nothing fires, backfills included; a resume goes on where they stopped.
  if (def === undefined || s.status !== "active") return { kind: "idle" };
  for (const b of s.backfills) {
    const n = nextNominal(def.spec, b.cursor, s.createdAt);
    if (n !== undefined && n <= b.to) return { kind: "fire", nominalAt: n, backfillId: b.backfillId };
  }
  const first = nextNominal(def.spec, s.cursor, s.createdAt);
  if (first === undefined) return { kind: "idle" };
  const due = first + jitterOf(def.scheduleId, first, def.jitterMs);
  if (due > nowMs) return { kind: "wait", untilMs: due };
  if (nowMs - first > def.catchUpMs) return { kind: "skip", data: missedFrom(s, first, nowMs) };
  if (openRuns.length > 0) {
    switch (def.overlap) {
      case "skip":
        return { kind: "skip", data: { nominalAt: iso(first), reason: "overlap", count: 1 } };
      case "buffer-one":
        return { kind: "wait-for-run" };
      case "cancel-previous":
        return { kind: "fire", nominalAt: first, cancel: openRuns[openRuns.length - 1]! };
      case "allow-all":
        break;
    }
  }
  const later = def.overlap === "buffer-one" ? dueAfter(s, first, nowMs) : undefined;
  return later === undefined ? { kind: "fire", nominalAt: first } : { kind: "fire", nominalAt: first, thenSkip: later };
}

/** Every regular fire from `first` whose catch-up window has passed at `nowMs`, as one event. */
function missedFrom(s: ScheduleState, first: number, nowMs: number): DataOf<"schedule.skipped"> {
  const spec = s.def!.spec;
  let last = first;
  let count = 1;
  for (let n = nextNominal(spec, first, s.createdAt); n !== undefined && nowMs - n > s.def!.catchUpMs;) {
    last = n;
    if (++count >= MAX_SCAN) break;
    n = nextNominal(spec, n, s.createdAt);
  }
  return { nominalAt: iso(first), reason: "missed", count, ...(count > 1 ? { lastNominalAt: iso(last) } : {}) };
}

/** buffer-one: the fires after `first` already due at `nowMs` (they came due while a run held the slot). */
function dueAfter(s: ScheduleState, first: number, nowMs: number): DataOf<"schedule.skipped"> | undefined {
  const spec = s.def!.spec;
  let start: number | undefined;
  let last = first;
  let count = 0;
  for (let n = nextNominal(spec, first, s.createdAt); n !== undefined && n <= nowMs && count < MAX_SCAN;) {
    start ??= n;
    last = n;
    count++;
    n = nextNominal(spec, n, s.createdAt);
  }
  if (start === undefined) return undefined;
  return { nominalAt: iso(start), reason: "overlap", count, ...(count > 1 ? { lastNominalAt: iso(last) } : {}) };
}

/** How many fires `spec` names in [from, to], up to `cap + 1` (a backfill's size check). */
export function countFires(s: Pick<ScheduleState, "def" | "createdAt">, from: number, to: number, cap: number): number {
  let count = 0;
  for (let n = nextNominal(s.def!.spec, from - 1, s.createdAt); n !== undefined && n <= to && count <= cap;) {
    count++;
    n = nextNominal(s.def!.spec, n, s.createdAt);
  }
  return count;
}
