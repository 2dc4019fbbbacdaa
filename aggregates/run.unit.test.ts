import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EVENT_TYPES, RuntimeInstanceId, type DroverEvent, type EventType } from "../contracts/index.ts";
import { EXAMPLE_BUILDERS, ids } from "../test/support/example-events.ts";
import { foldRun, isTerminal, RUN_END_EVENTS, RUN_PLACEMENT_EVENTS, type RunState } from "./run.ts";

const ev = (t: EventType, patch: Record<string, unknown> = {}) =>
  ({ ...EXAMPLE_BUILDERS[t](), ...patch }) as DroverEvent;
const fold = (events: DroverEvent[]) => foldRun(events.map((event, i) => ({ seq: i + 1, event })));
const other = RuntimeInstanceId.parse("rt-elsewhere");
const byRuntime = (t: EventType, runtimeInstanceId: string) => {
  const e = ev(t);
  return { ...e, writer: { service: "runtime", instanceId: "p-1", runtimeInstanceId } } as DroverEvent;
};

describe("run fold: a runtime's run events count only from the runtime the run is placed on (pure: proves no transport)", () => {
  const placed = [ev("run.submitted"), ev("run.admitted"), ev("run.dispatched")];

  it("applies started and completed written by the placed runtime", () => {
    const s = fold([...placed, byRuntime("run.started", ids.runtime), byRuntime("run.completed", ids.runtime)]);
    expect(s.status).toBe("completed");
  });

  it("steps over started, completed, failed and cancelled written by another runtime, keeping the sequence", () => {
    for (const t of ["run.started", "run.completed", "run.failed", "run.cancelled"] as const) {
      const s = fold([...placed, byRuntime(t, other)]);
      expect([t, s.status, s.lastSeq]).toEqual([t, "dispatched", 4]);
    }
  });

  it("steps over a runtime's terminal event once the run was requeued away from it", () => {
    const s = fold([...placed, ev("run.requeued-for-resume"), byRuntime("run.completed", ids.runtime)]);
    expect(s.status).toBe("requeued-for-resume");
    expect(s.recoveryPending).toBe(true);
  });

  it("applies a service's run.failed (recovery) whatever the placement", () => {
    const s = fold([...placed, ev("run.requeued-for-resume"), ev("run.failed")]);
    expect(s.status).toBe("failed");
  });

  it("steps over a run.submitted or run.cancel-requested that declares a runtime writer, even the placed one (runtimes may not write them; admission submits child runs)", () => {
    const submitted = fold([byRuntime("run.submitted", other)]);
    expect(submitted.status).toBe("none");
    expect(submitted.lastSeq).toBe(1);
    const cancel = fold([...placed, byRuntime("run.cancel-requested", ids.runtime)]);
    expect(cancel.cancelRequested).toBeUndefined();
    expect(cancel.status).toBe(fold(placed).status);
  });
});

describe("run fold: the worker version a run is pinned to (pure: proves no transport)", () => {
  const V1 = "1".repeat(64);
  const V2 = "2".repeat(64);
  const admitted = (workerVersion: string) =>
    ev("run.admitted", { data: { ...EXAMPLE_BUILDERS["run.admitted"]().data, workerVersion } });

  it("is pinned when the run first starts, to its placement's version; a later placement on another version does not move it", () => {
    const placedOnly = fold([ev("run.submitted"), admitted(V1), ev("run.dispatched")]);
    expect([placedOnly.placement?.workerVersion, placedOnly.workerVersion]).toEqual([V1, undefined]);
    const started = fold([
      ev("run.submitted"),
      admitted(V1),
      ev("run.dispatched"),
      byRuntime("run.started", ids.runtime),
    ]);
    expect(started.workerVersion).toBe(V1);
    const resumed = fold([
      ev("run.submitted"),
      admitted(V1),
      ev("run.dispatched"),
      byRuntime("run.started", ids.runtime),
      ev("run.requeued-for-resume"),
      admitted(V2),
      ev("run.dispatched"),
      byRuntime("run.started", ids.runtime),
    ]);
    expect(resumed.workerVersion).toBe(V1);
  });

  it("run.upgraded moves a pinned run to its toVersion, which a later start keeps; it moves no unpinned or ended run", () => {
    const upgraded = (toVersion: string) =>
      ev("run.upgraded", { data: { fromVersion: V1, toVersion, kinds: ["custom:work"], by: "tenant:tenant-a" } });
    const pinned = [ev("run.submitted"), admitted(V1), ev("run.dispatched"), byRuntime("run.started", ids.runtime)];
    expect(fold([...pinned, upgraded(V2)]).workerVersion).toBe(V2);
    const resumed = fold([
      ...pinned,
      upgraded(V2),
      ev("run.requeued-for-resume"),
      admitted(V2),
      ev("run.dispatched"),
      byRuntime("run.started", ids.runtime),
    ]);
    expect([resumed.workerVersion, resumed.status]).toEqual([V2, "started"]);
    expect(fold([ev("run.submitted"), admitted(V1), upgraded(V2)]).workerVersion).toBeUndefined();
    expect(fold([...pinned, byRuntime("run.completed", ids.runtime), upgraded(V2)]).workerVersion).toBe(V1);
  });
});

describe("run fold: RUN_END_EVENTS alone decide whether a run ended (pure, bounded property)", () => {
  const runTypes = EVENT_TYPES.filter((t) => t.startsWith("run."));
  const runtimes = [ids.runtime, other];
  const lifecycle = [
    "run.admitted",
    "run.dispatched",
    "run.dispatch-failed",
    "run.started",
    "run.requeued-for-resume",
    "run.requeued-for-local-queued-recovery",
    "run.completed",
    "run.failed",
    "run.cancelled",
    "run.rejected",
  ] as const;
  // Any run event, written by a service or by one of two runtimes; an admission places the run on either.
  const anyEventOf = (often: readonly EventType[]) =>
    fc
      .record({
        // Every run type, `often` more often: a placement cleared, then a runtime's end, is found.
        t: fc.oneof(
          { arbitrary: fc.constantFrom(...runTypes), weight: 1 },
          { arbitrary: fc.constantFrom(...often), weight: 3 },
        ),
        writer: fc.nat(runtimes.length),
        on: fc.nat(runtimes.length - 1),
        // An admission that pins a worker version: `started` pins the run, and `upgraded` then moves it.
        pinned: fc.boolean(),
      })
      .map(({ t, writer, on, pinned }) => {
        const e = writer === runtimes.length ? ev(t) : byRuntime(t, runtimes[writer]!);
        const version = pinned ? { workerVersion: "a".repeat(64) } : {};
        return t === "run.admitted"
          ? ({ ...e, data: { ...(e.data as object), runtimeInstanceId: runtimes[on], ...version } } as DroverEvent)
          : e;
      });
  const anyEvent = anyEventOf(lifecycle);

  it("a fold of only those events first becomes terminal at the same event as the fold of every event", () => {
    const ends = new Set<string>(RUN_END_EVENTS);
    // The index of the first event after which the fold is terminal (-1: never).
    const firstEnd = (stored: readonly { seq: number; event: DroverEvent }[]) =>
      stored.findIndex((_, i) => isTerminal(foldRun(stored.slice(0, i + 1)).status));
    fc.assert(
      fc.property(fc.array(anyEvent, { maxLength: 12 }), (events) => {
        const stored = events.map((event, i) => ({ seq: i + 1, event }));
        const some = stored.map((m) => (ends.has(m.event.type) ? m : { ...m, event: ev("run.replacement-selected") }));
        expect(firstEnd(some)).toBe(firstEnd(stored));
      }),
      { numRuns: 3000 },
    );
  });

  it("a fold of only RUN_PLACEMENT_EVENTS equals the full fold on what recovery reads, after every event", () => {
    const placing = new Set<string>(RUN_PLACEMENT_EVENTS);
    // What recovery reads of a run (classify, timeline, replace, its bound); `submitted` is `none` to it.
    const view = (s: RunState) => ({
      status: s.status === "submitted" ? "none" : s.status,
      placement: s.placement,
      executionId: s.executionId,
      recoveryPending: s.recoveryPending,
      workerVersion: s.workerVersion,
    });
    // A pinned run's upgrade, and the submission, as often as the lifecycle's moves.
    const runAnyEvents = fc.array(anyEventOf([...lifecycle, "run.upgraded", "run.submitted"]), { maxLength: 12 });
    fc.assert(
      fc.property(runAnyEvents, (events) => {
        const stored = events.map((event, i) => ({ seq: i + 1, event }));
        stored.forEach((_, i) => {
          const upTo = stored.slice(0, i + 1);
          const some = upTo.filter((m) => placing.has(m.event.type));
          expect(view(foldRun(some))).toEqual(view(foldRun(upTo)));
        });
      }),
      { numRuns: 3000 },
    );
  });
});
