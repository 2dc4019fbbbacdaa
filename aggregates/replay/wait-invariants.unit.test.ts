import { describe, expect, it } from "vitest";
import {
  buildEvent,
  DagDefinition,
  RuntimeInstanceId,
  TenantId,
  type DataOf,
  type Writer,
} from "../../contracts/index.ts";
import { eventData } from "../../test/support/event-data.ts";
import { foldExecution, type SequencedEvent } from "../execution.ts";
import { waitProblem } from "./wait-invariants.ts";

// Pure: the journal fold of wait events and replay's wait checks over built events; no transport.
const writer: Writer = {
  service: "runtime",
  instanceId: "rt-a",
  runtimeInstanceId: RuntimeInstanceId.parse("rt-a"),
  epoch: 0,
};
const ctx = { tenantId: TenantId.parse("t1"), correlationId: "c1", causationId: "c1", writer };
let n = 0;
const ev = <T extends "exec.started" | "exec.wait-opened" | "exec.wait-resolved">(
  seq: number,
  type: T,
  raw: unknown,
) => ({
  seq,
  event: buildEvent(type, eventData(type, raw) as DataOf<T>, ctx, {
    eventId: `e-${++n}`,
    now: new Date("2026-01-01T00:00:00.000Z"),
  }),
});
const started = ev(1, "exec.started", {
  sharedRunId: "s1",
  localRunId: "l1",
  runtimeInstanceId: "rt-a",
  dagDigest: "a".repeat(64),
  stepCount: 1,
  epoch: 0,
});
const opened = (seq: number, timeoutAt = "2026-01-01T01:00:00.000Z") =>
  ev(seq, "exec.wait-opened", { stepId: "review", name: "approval", timeoutAt });
const bySignal = (seq: number) =>
  ev(seq, "exec.wait-resolved", {
    stepId: "review",
    name: "approval",
    by: "signal",
    principal: "tenant:t1:token:alice",
    payloadDigest: "b".repeat(64),
    signalSeq: 4,
  });
const dag = DagDefinition.parse({
  steps: [
    { id: "review", kind: "wait", params: { name: "approval", timeoutMs: 1000 } },
    { id: "other", kind: "compute", dependsOn: ["review"] },
  ],
});
const byId = new Map(dag.steps.map((s) => [s.id as string, s]));

describe("the execution fold keeps a wait's first deadline and one resolution (pure, no transport)", () => {
  it("a second wait-opened never moves the deadline, and a resolution lands once, after its opening", () => {
    const s = foldExecution([
      started,
      opened(2),
      opened(3, "2026-01-02T00:00:00.000Z"),
      bySignal(4),
      bySignal(5),
    ] as SequencedEvent[]);
    expect(s.waits.get("review")).toMatchObject({
      timeoutAt: Date.parse("2026-01-01T01:00:00.000Z"),
      resolved: { by: "signal", principal: "tenant:t1:token:alice" },
    });
    expect(s.violations).toEqual([
      "second wait-opened for review at seq 3",
      "wait-resolved for review not open at seq 5",
    ]);
    expect(foldExecution([started, bySignal(2)] as SequencedEvent[]).violations).toEqual([
      "wait-resolved for review not open at seq 2",
    ]);
  });
});

describe("replay's wait checks (pure, no transport)", () => {
  it("accepts a wait event naming the DAG's wait step by its signal name", () => {
    expect(waitProblem(2, opened(2).event, byId.get("review"))).toBeUndefined();
    expect(waitProblem(3, bySignal(3).event, byId.get("review"))).toBeUndefined();
  });
  it("reports a wait event for a step not in the DAG, a step that is no wait, or another signal name", () => {
    expect(waitProblem(2, opened(2).event, undefined)).toMatchObject({ invariant: "unknown-step", seq: 2 });
    expect(waitProblem(2, opened(2).event, byId.get("other"))).toMatchObject({
      invariant: "scheduler-divergence",
      message: 'exec.wait-opened at seq 2: step review is a compute step, not the wait "approval"',
    });
    const renamed = ev(3, "exec.wait-opened", {
      stepId: "review",
      name: "other",
      timeoutAt: "2026-01-01T01:00:00.000Z",
    });
    expect(waitProblem(3, renamed.event, byId.get("review"))).toMatchObject({ invariant: "scheduler-divergence" });
  });
  it("reports a resolution by signal without its principal", () => {
    const bare = ev(3, "exec.wait-resolved", { stepId: "review", name: "approval", by: "signal" });
    expect(waitProblem(3, bare.event, byId.get("review"))).toMatchObject({
      invariant: "scheduler-divergence",
      message: "exec.wait-resolved at seq 3: wait review resolved by a signal with no principal or payload digest",
    });
  });
});
