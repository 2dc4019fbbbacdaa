import { describe, expect, it } from "vitest";
import {
  buildEvent,
  RuntimeInstanceId,
  TenantId,
  type DataOf,
  type EventType,
  type Writer,
} from "../contracts/index.ts";
import { eventData } from "../test/support/event-data.ts";
import { foldExecution, type SequencedEvent } from "./execution.ts";

const writer: Writer = {
  service: "runtime",
  instanceId: "rt-a",
  runtimeInstanceId: RuntimeInstanceId.parse("rt-a"),
  epoch: 0,
};
const ctx = { tenantId: TenantId.parse("t1"), correlationId: "c1", causationId: "c1", writer };
const runtimeWriter = (id: string): Writer => ({
  ...writer,
  instanceId: id,
  runtimeInstanceId: RuntimeInstanceId.parse(id),
});
const recoveryWriter: Writer = { service: "recovery", instanceId: "recovery-1" };
let n = 0;
const ev = <T extends EventType>(seq: number, type: T, data: DataOf<T>, by: Writer = writer): SequencedEvent => ({
  seq,
  event: buildEvent(
    type,
    data,
    { ...ctx, writer: by },
    { eventId: `e-${++n}`, now: new Date("2026-01-01T00:00:00.000Z") },
  ),
});
const digest = "a".repeat(64);
const started = (seq: number) =>
  ev(
    seq,
    "exec.started",
    eventData("exec.started", {
      sharedRunId: "s1",
      localRunId: "l1",
      runtimeInstanceId: "rt-a",
      dagDigest: digest,
      stepCount: 3,
      epoch: 0,
    }),
  );
const done = (seq: number, stepId: string, attempt = 1) =>
  ev(
    seq,
    "exec.step-completed",
    eventData("exec.step-completed", {
      stepId,
      attempt,
      output: { v: stepId },
      outputDigest: digest,
      durationMs: 1,
    }),
  );
const paused = (seq: number, newEpoch: number) =>
  ev(
    seq,
    "exec.paused-for-recovery",
    eventData("exec.paused-for-recovery", {
      forensicsId: "runtime-recovery:x:s1:l1",
      incidentId: "inc-1",
      failedRuntimeInstanceId: "rt-a",
      newEpoch,
    }),
    recoveryWriter,
  );

describe("foldExecution: the journal is the resume state", () => {
  it("given started and two step-completed, then both outputs are recorded and lastSeq is the next append's expectation", () => {
    const s = foldExecution([started(3), done(7, "a"), done(9, "b")]);
    expect([...s.completed.keys()]).toEqual(["a", "b"]);
    expect(s.completed.get("b")).toEqual({ attempt: 1, output: { v: "b" }, outputDigest: digest, seq: 9 });
    expect(s.lastSeq).toBe(9);
    expect(s.epoch).toBe(0);
    expect(s.violations).toEqual([]);
  });

  it("given a sleep step's timer, then its wake-up is kept per attempt (a duplicate never moves it), a new attempt replaces it and completion clears it (proves no transport)", () => {
    const timer = (seq: number, attempt: number, wakeAt: string) =>
      ev(
        seq,
        "exec.timer-started",
        eventData("exec.timer-started", {
          stepId: "nap",
          attempt,
          durationMs: 1000,
          wakeAt,
        }),
      );
    const t1 = "2026-01-01T00:00:01.000Z",
      t2 = "2026-01-01T00:00:05.000Z";
    expect(foldExecution([started(1), timer(2, 1, t1), timer(3, 1, t2)]).timers.get("nap")).toEqual({
      attempt: 1,
      wakeAt: Date.parse(t1),
    });
    expect(foldExecution([started(1), timer(2, 1, t1), timer(3, 2, t2)]).timers.get("nap")).toEqual({
      attempt: 2,
      wakeAt: Date.parse(t2),
    });
    expect(foldExecution([started(1), timer(2, 1, t1), done(3, "nap")]).timers.has("nap")).toBe(false);
  });

  it("given a failed attempt with a retry time, then the failure carries its attempt, retryAt in epoch ms and error; a later completion clears it", () => {
    const failed = ev(
      5,
      "exec.step-failed",
      eventData("exec.step-failed", {
        stepId: "a",
        attempt: 1,
        error: "boom",
        retryAt: "2026-01-01T00:00:01.000Z",
      }),
    );
    expect(foldExecution([started(1), failed]).failures.get("a")).toEqual({
      attempt: 1,
      retryAt: Date.parse("2026-01-01T00:00:01.000Z"),
      error: "boom",
    });
    expect(foldExecution([started(1), failed, done(6, "a", 2)]).failures.has("a")).toBe(false);
  });

  it("given paused-for-recovery, then the epoch moves to newEpoch and recovery is pending until a resumed at that epoch", () => {
    const pausedState = foldExecution([started(1), done(2, "a"), paused(4, 1)]);
    expect(pausedState.epoch).toBe(1);
    expect(pausedState.pendingRecovery?.newEpoch).toBe(1);
    const resumed = ev(
      5,
      "exec.resumed",
      eventData("exec.resumed", {
        runtimeInstanceId: "rt-b",
        localRunId: "l2",
        epoch: 1,
        completedSteps: 1,
      }),
      runtimeWriter("rt-b"),
    );
    const s = foldExecution([started(1), done(2, "a"), paused(4, 1), resumed]);
    expect(s.pendingRecovery).toBeUndefined();
    expect(s.lastResumed?.runtimeInstanceId).toBe("rt-b");
    expect(s.epoch).toBe(1);
  });

  it("given a second step-completed for the same step, then the first output is kept and the duplicate is reported with its sequence", () => {
    const s = foldExecution([started(1), done(2, "a", 1), done(3, "a", 2)]);
    expect(s.completed.get("a")?.seq).toBe(2);
    expect(s.violations).toEqual(["duplicate step-completed for a at seq 3"]);
  });

  it("given paused-for-recovery before any started (the runtime died between run started and exec started), then the fold resumes from nothing", () => {
    const s = foldExecution([paused(1, 1)]);
    expect(s.started).toBeUndefined();
    expect(s.pendingRecovery?.newEpoch).toBe(1);
    expect(s.completed.size).toBe(0);
  });

  it("given a terminal event, then the state is terminal", () => {
    expect(foldExecution([started(1), ev(2, "exec.completed", { outputDigest: digest })]).terminal).toBe("completed");
    expect(foldExecution([started(1), ev(2, "exec.cancelled", { reason: "" })]).terminal).toBe("cancelled");
  });

  it("given exec events written by a runtime the execution is not placed on, then they are stepped over (by sequence), across a recovery", () => {
    const by = (id: string) => runtimeWriter(id);
    const resumedOn = (seq: number, id: string, w: Writer = by(id)) =>
      ev(
        seq,
        "exec.resumed",
        eventData("exec.resumed", { runtimeInstanceId: id, localRunId: "l2", epoch: 1, completedSteps: 1 }),
        w,
      );
    const doneBy = (seq: number, stepId: string, w: Writer) =>
      ev(seq, "exec.step-completed", { ...done(seq, stepId).event.data } as DataOf<"exec.step-completed">, w);
    // rt-x (another runtime of the tenant) completes a step and the execution of rt-a: stepped over.
    const before = foldExecution([
      started(1),
      doneBy(2, "a", by("rt-x")),
      ev(3, "exec.completed", { outputDigest: digest }, by("rt-x")),
    ]);
    expect([before.completed.size, before.terminal, before.steppedOver, before.lastSeq]).toEqual([
      0,
      undefined,
      [2, 3],
      3,
    ]);
    // An exec.started naming rt-a but written by rt-x does not place the execution.
    expect(
      foldExecution([{ ...started(1), event: { ...started(1).event, writer: by("rt-x") } }]).started,
    ).toBeUndefined();
    // Recovery: after paused-for-recovery, the failed rt-a's writes count for nothing; a resume claimed
    // for rt-b by rt-x is stepped over; rt-b's own resume places it on rt-b, whose writes count, rt-a's not.
    const s = foldExecution([
      started(1),
      done(2, "a"),
      paused(3, 1),
      doneBy(4, "b", by("rt-a")),
      resumedOn(5, "rt-b", by("rt-x")),
      resumedOn(6, "rt-b"),
      doneBy(7, "b", by("rt-a")),
      doneBy(8, "c", by("rt-b")),
    ]);
    expect(s.lastResumed?.runtimeInstanceId).toBe("rt-b");
    expect(s.pendingRecovery).toBeUndefined();
    expect([...s.completed.keys()]).toEqual(["a", "c"]);
    expect(s.steppedOver).toEqual([4, 5, 7]);
    expect(s.lastSeq).toBe(8);
    expect(s.violations).toEqual([]);
    // A resume while no recovery is pending is stepped over: rt-b cannot take a live execution.
    expect(foldExecution([started(1), resumedOn(2, "rt-b")]).steppedOver).toEqual([2]);
  });
});
