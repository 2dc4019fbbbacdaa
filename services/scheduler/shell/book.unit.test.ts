import { describe, expect, it } from "vitest";
import type { DroverEvent, EventType } from "../../../contracts/index.ts";
import { EXAMPLE_BUILDERS, ids } from "../../../test/support/example-events.ts";
import { ScheduleBook } from "./book.ts";

// Boundary: the scheduler's in-memory book fed decoded-shape messages by hand (pure: proves no transport).
const enc = new TextEncoder();
const ev = (t: EventType) => EXAMPLE_BUILDERS[t]() as DroverEvent;
const byRuntime = (t: EventType, runtimeInstanceId: string) =>
  ({ ...ev(t), writer: { service: "runtime", instanceId: "p-1", runtimeInstanceId } }) as DroverEvent;

function feed(book: ScheduleBook, events: DroverEvent[]): void {
  events.forEach((e, i) => {
    const [agg, name] = e.type.split(".");
    const subject =
      agg === "schedule" ? `d.schedule.tenant-a.sch-nightly.${name}` : `d.${agg}.tenant-a.${ids.sharedRun}.${name}`;
    book.apply({ subject, seq: i + 1, data: enc.encode(JSON.stringify(e)), info: { timestampNanos: 1e15 } as never });
  });
}

const opened = (): DroverEvent[] => [
  ev("schedule.created"),
  ev("schedule.fired"),
  ev("run.submitted"),
  ev("run.admitted"),
  ev("run.dispatched"),
];
const openRuns = (book: ScheduleBook) => [...book.entries.values()].flatMap((e) => [...e.open]);

describe("scheduler book: a fire's run ends by the run's own fold (pure: proves no transport)", () => {
  it("closes the run on a completion written by the runtime it is placed on", () => {
    const book = new ScheduleBook(() => undefined);
    feed(book, [...opened(), byRuntime("run.completed", ids.runtime)]);
    expect(openRuns(book)).toEqual([]);
  });

  it("keeps the run open when a runtime it is not placed on writes its completion (an overlap skip cannot start early)", () => {
    const book = new ScheduleBook(() => undefined);
    feed(book, [...opened(), byRuntime("run.completed", "rt-elsewhere")]);
    expect(openRuns(book)).toEqual([ids.sharedRun]);
  });

  it("closes the run on a service's terminal event (admission's cancel, recovery's failure)", () => {
    for (const t of ["run.cancelled", "run.failed"] as const) {
      const book = new ScheduleBook(() => undefined);
      feed(book, [...opened(), ev(t)]);
      expect([t, openRuns(book)]).toEqual([t, []]);
    }
  });

  it("decodes only the run events of runs a fire started: others are stepped over by subject, undecoded", () => {
    const invalid: string[] = [];
    const book = new ScheduleBook((subject) => invalid.push(subject));
    const garbage = (subject: string, seq: number) =>
      book.apply({ subject, seq, data: enc.encode("{not json"), info: { timestampNanos: 1e15 } as never });
    garbage("d.run.tenant-a.run-not-fired.submitted", 1);
    expect(invalid).toEqual([]);
    feed(book, opened());
    garbage(`d.run.tenant-a.${ids.sharedRun}.started`, 10);
    expect(invalid).toEqual([`d.run.tenant-a.${ids.sharedRun}.started`]);
    expect(openRuns(book)).toEqual([ids.sharedRun]);
  });
});
