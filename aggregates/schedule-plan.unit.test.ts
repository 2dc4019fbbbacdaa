import { describe, expect, it } from "vitest";
import { buildEvent, ScheduleId, SharedRunId, TenantId, type DataOf } from "../contracts/index.ts";
import { exampleDag } from "../test/support/example-events.ts";
import { applySchedule, checkSpec, EMPTY_SCHEDULE, type ScheduleEvent, type ScheduleState } from "./schedule.ts";
import { countFires, jitterOf, planSchedule } from "./schedule-plan.ts";

const T0 = Date.parse("2026-12-02T12:00:00.000Z");
const iso = (t: number) => new Date(t).toISOString();
let seq = 0;
const origin = {
  tenantId: TenantId.parse("acme"),
  correlationId: "sch-a",
  causationId: "test",
  writer: { service: "test" as const, instanceId: "t" },
};
const ev = <T extends ScheduleEvent["type"]>(type: T, data: DataOf<T>) =>
  buildEvent(type, data, origin, { eventId: `ev-${++seq}`, now: new Date(T0) });
const at = (s: ScheduleState, t: number, e: ScheduleEvent) =>
  applySchedule(s, { seq: ++seq, time: new Date(t), event: e });
const created = (over: Partial<DataOf<"schedule.created">> = {}): ScheduleState =>
  at(
    EMPTY_SCHEDULE,
    T0,
    ev("schedule.created", {
      scheduleId: ScheduleId.parse("sch-a"),
      spec: { intervalMs: 1000 },
      dag: exampleDag,
      labels: {},
      overlap: "allow-all",
      catchUpMs: 5000,
      jitterMs: 0,
      by: "token:t",
      ...over,
    }),
  );
const fired = (s: ScheduleState, n: number, extra: Partial<DataOf<"schedule.fired">> = {}) =>
  at(s, n, ev("schedule.fired", { nominalAt: iso(n), sharedRunId: SharedRunId.parse(`run-${n}`), ...extra }));

describe("schedule plan (pure decisions over the fold; proves no transport)", () => {
  it("waits for the first nominal time after creation, then fires it, then waits for the next", () => {
    const s = created();
    expect(planSchedule(s, T0 + 10, [])).toEqual({ kind: "wait", untilMs: T0 + 1000 });
    expect(planSchedule(s, T0 + 1000, [])).toEqual({ kind: "fire", nominalAt: T0 + 1000 });
    expect(planSchedule(fired(s, T0 + 1000), T0 + 1001, [])).toEqual({ kind: "wait", untilMs: T0 + 2000 });
  });

  it("a cron schedule is read in its time zone", () => {
    const s = created({ spec: { cron: "0 9 * * *", timezone: "Europe/Berlin" } });
    expect(planSchedule(s, T0, [])).toEqual({ kind: "wait", untilMs: Date.parse("2026-12-03T08:00:00.000Z") });
  });

  it("fires missed beyond the catch-up window become one skipped{missed} event; those inside it still fire", () => {
    const s = created(); // every second, catch-up 5 s
    const step = planSchedule(s, T0 + 60_000, []);
    expect(step).toEqual({
      kind: "skip",
      data: { nominalAt: iso(T0 + 1000), reason: "missed", count: 54, lastNominalAt: iso(T0 + 54_000) },
    });
    if (step.kind !== "skip") throw new Error("expected a skip");
    const after = at(s, T0 + 60_000, ev("schedule.skipped", step.data));
    expect(planSchedule(after, T0 + 60_000, [])).toEqual({ kind: "fire", nominalAt: T0 + 55_000 });
  });

  it("overlap: skip records the fire skipped, buffer-one waits for the run, cancel-previous names it, allow-all fires", () => {
    const open = ["run-x"];
    expect(planSchedule(created({ overlap: "skip" }), T0 + 1000, open)).toEqual({
      kind: "skip",
      data: { nominalAt: iso(T0 + 1000), reason: "overlap", count: 1 },
    });
    expect(planSchedule(created({ overlap: "buffer-one" }), T0 + 1000, open)).toEqual({ kind: "wait-for-run" });
    expect(planSchedule(created({ overlap: "cancel-previous" }), T0 + 1000, open)).toEqual({
      kind: "fire",
      nominalAt: T0 + 1000,
      cancel: "run-x",
    });
    expect(planSchedule(created({ overlap: "allow-all" }), T0 + 1000, open)).toEqual({
      kind: "fire",
      nominalAt: T0 + 1000,
    });
  });

  it("buffer-one: when the run ends, the first waiting fire starts and the later ones are skipped with it", () => {
    expect(planSchedule(created({ overlap: "buffer-one" }), T0 + 3500, [])).toEqual({
      kind: "fire",
      nominalAt: T0 + 1000,
      thenSkip: { nominalAt: iso(T0 + 2000), reason: "overlap", count: 2, lastNominalAt: iso(T0 + 3000) },
    });
  });

  it("a paused schedule fires nothing; resuming does not catch up the fires of the pause", () => {
    const paused = at(created(), T0 + 500, ev("schedule.paused", { by: "token:t" }));
    expect(planSchedule(paused, T0 + 10_000, [])).toEqual({ kind: "idle" });
    const resumed = at(paused, T0 + 10_200, ev("schedule.resumed", { by: "token:t" }));
    expect(planSchedule(resumed, T0 + 10_200, [])).toEqual({ kind: "wait", untilMs: T0 + 11_000 });
    const deleted = at(resumed, T0 + 10_300, ev("schedule.deleted", { by: "token:t" }));
    expect(planSchedule(deleted, T0 + 20_000, [])).toEqual({ kind: "idle" });
  });

  it("a backfill fires every nominal time of its range in order, whatever the overlap; pausing halts it", () => {
    let s = created({ spec: { cron: "0 * * * * *", timezone: "UTC" }, overlap: "skip" });
    const from = Date.parse("2026-12-01T00:00:00.000Z");
    const to = from + 3_600_000 - 1;
    s = at(
      s,
      T0,
      ev("schedule.backfill-requested", {
        backfillId: ScheduleId.parse("bf-1"),
        from: iso(from),
        to: iso(to),
        by: "t",
      }),
    );
    const nominals: number[] = [];
    for (let step = planSchedule(s, T0, ["run-x"]); step.kind === "fire"; step = planSchedule(s, T0, ["run-x"])) {
      nominals.push(step.nominalAt);
      s = fired(s, step.nominalAt, { backfillId: ScheduleId.parse("bf-1") });
    }
    expect(nominals).toHaveLength(60);
    const half = at(
      created({ spec: { cron: "0 * * * * *", timezone: "UTC" } }),
      T0,
      ev("schedule.paused", { by: "t" }),
    );
    const pausedBf = at(
      half,
      T0,
      ev("schedule.backfill-requested", {
        backfillId: ScheduleId.parse("bf-2"),
        from: iso(from),
        to: iso(to),
        by: "t",
      }),
    );
    expect(planSchedule(pausedBf, T0, [])).toEqual({ kind: "idle" });
    expect(nominals[0]).toBe(from);
    expect(nominals.at(-1)).toBe(from + 59 * 60_000);
    expect(countFires(s, from, to, 10_000)).toBe(60);
  });

  it("jitter is deterministic per (schedule, nominal time) and bounded", () => {
    const j = jitterOf("sch-a", T0, 500);
    expect(jitterOf("sch-a", T0, 500)).toBe(j);
    expect(j).toBeGreaterThanOrEqual(0);
    expect(j).toBeLessThanOrEqual(500);
    const s = created({ jitterMs: 500 });
    const due = T0 + 1000 + jitterOf("sch-a", T0 + 1000, 500);
    expect(planSchedule(s, due - 1, [])).toEqual({ kind: "wait", untilMs: due });
  });

  it("checkSpec names an expression that never fires, an unknown zone and a malformed expression", () => {
    expect(checkSpec({ cron: "0 0 30 2 *", timezone: "UTC" }, T0)).toBe("the expression never fires");
    expect(checkSpec({ cron: "0 0 * * *", timezone: "Mars/Olympus" }, T0)).toMatch(/timezone/i);
    expect(checkSpec({ cron: "bad", timezone: "UTC" }, T0)).toMatch(/five, six, or seven/);
    expect(checkSpec({ intervalMs: 1000 }, T0)).toBeUndefined();
    // One that reached the log anyway (the API checks every spec) never fires and never throws.
    expect(planSchedule(created({ spec: { cron: "bad", timezone: "UTC" } }), T0 + 5000, [])).toEqual({ kind: "idle" });
  });
});
