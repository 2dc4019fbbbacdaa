import { describe, expect, it } from "vitest";
import { StepId, type DroverEvent } from "../../../contracts/index.ts";
import { exampleEvent, forensicsIds, ids } from "../../../test/support/example-events.ts";
import { evolveExecutionDoc } from "./execution-doc.ts";
import { mayHoldNul, storable, type Fact } from "./fact.ts";
import { evolveIncidentDoc, evolveIncidentItem, isIncidentEvent, itemIdsOf } from "./incident-doc.ts";
import { evolveRunDoc } from "./run-doc.ts";

const fact = <E extends DroverEvent>(event: E, seq: number, aggregateId: string): Fact<E> => ({
  stream: "DROVER",
  seq,
  storedAt: "2026-01-02T03:04:06.000Z",
  aggregateId,
  event,
});
const step = (stepId: string) => {
  const e = exampleEvent("exec.step-completed");
  return { ...e, data: { ...e.data, stepId: StepId.parse(stepId) } };
};

describe("read-model folds", () => {
  it("replaces NUL in every string FerretDB would refuse, keeping everything else as it is", () => {
    const clean = { a: "x", n: 1, list: [{ b: "y" }] };
    // Nothing to replace: the value itself, not a copy (copying every row was ~8% of the projector's CPU).
    expect(storable(clean)).toBe(clean);
    expect(storable({ a: "x\u0000y", list: [{ b: "\u0000" }], n: null })).toEqual({
      a: "x\uFFFDy",
      list: [{ b: "\uFFFD" }],
      n: null,
    });
  });

  it("tells from a value's JSON whether it may hold a NUL (JSON escapes one), a false alarm at worst", () => {
    expect(mayHoldNul(JSON.stringify({ a: "x", list: [{ b: "y\n" }] }))).toBe(false);
    expect(mayHoldNul(JSON.stringify({ list: [{ b: "y\u0000" }] }))).toBe(true);
    // A backslash then `u0000`: no NUL, but the walk it costs finds none and changes nothing.
    expect(mayHoldNul(JSON.stringify({ a: "\\u0000" }))).toBe(true);
  });

  it("ignores a fact at or below the document's lastSeq (idempotent by stream sequence)", () => {
    const run = evolveRunDoc(undefined, fact(exampleEvent("run.submitted"), 3, ids.sharedRun));
    const admitted = evolveRunDoc(run, fact(exampleEvent("run.admitted"), 5, ids.sharedRun));
    expect(evolveRunDoc(admitted, fact(exampleEvent("run.admitted"), 5, ids.sharedRun))).toBe(admitted);
    expect(evolveRunDoc(admitted, fact(exampleEvent("run.cancelled"), 4, ids.sharedRun))).toBe(admitted);
    expect(admitted).toMatchObject({
      status: "admitted",
      lastSeq: 5,
      labels: [{ key: "team", value: "ml" }],
      placements: [{ admittedSeq: 5, candidates: 1 }],
    });
  });

  it("leaves the execution document alone on step events (nothing to rewrite) and folds its lifecycle", () => {
    const x = evolveExecutionDoc(undefined, fact(exampleEvent("exec.started"), 1, ids.execution));
    expect(evolveExecutionDoc(x, fact(step("a"), 2, ids.execution))).toBe(x);
    expect(evolveExecutionDoc(x, fact(exampleEvent("exec.step-failed"), 3, ids.execution))).toBe(x);
    const paused = evolveExecutionDoc(x, fact(exampleEvent("exec.paused-for-recovery"), 4, ids.execution));
    expect(paused).toMatchObject({
      status: "paused-for-recovery",
      epoch: 1,
      lastSeq: 4,
      pauses: [{ newEpoch: 1, seq: 4 }],
    });
  });

  it("builds an incident whichever comes first, the plan or an item's forensics, and never moves it backwards", () => {
    const done = fact(exampleEvent("forensics.execution-recovery-completed"), 10, forensicsIds.inFlight);
    let inc = evolveIncidentDoc(undefined, done, undefined);
    expect(inc).toMatchObject({ runtimeInstanceId: ids.runtime, tenantIds: [ids.tenant] });
    const item = evolveIncidentItem(undefined, done, forensicsIds.inFlight);
    expect(item).toMatchObject({ tenantId: ids.tenant, outcome: "completed", lastSeq: 10 });
    const plan = fact(exampleEvent("runtime.recovery-planned"), 11, ids.runtime);
    inc = evolveIncidentDoc(inc, plan, "owner-a");
    inc = evolveIncidentDoc(inc, fact(exampleEvent("runtime.suspected"), 12, ids.runtime), "owner-a");
    expect(inc).toMatchObject({
      status: "recovery-planned",
      ownerTenantId: "owner-a",
      planned: { seq: 11, itemCount: 2 },
      suspected: { seq: 12 },
    });
    expect(itemIdsOf(plan.event)).toEqual([forensicsIds.inFlight, forensicsIds.localQueued]);
    expect(evolveIncidentItem(item, plan, forensicsIds.inFlight)).toMatchObject({
      plannedSeq: 11,
      lastType: "forensics.execution-recovery-completed",
      outcome: "completed",
    });
    // A later forensics event of a tenant the incident already names changes nothing to write.
    expect(
      evolveIncidentDoc(inc, fact(exampleEvent("forensics.dag-resume-started"), 13, forensicsIds.inFlight), undefined),
    ).toBe(inc);
  });

  it("opens no incident for work moved after a planned stop (a `stop-…` id), and keeps it out of the run's and runtime's incidents", () => {
    const stopId = "stop-0123456789abcdef01234567";
    const planned = exampleEvent("runtime.recovery-planned");
    const requeued = exampleEvent("run.requeued-for-resume");
    const record = exampleEvent("forensics.execution-recovery-candidate-detected");
    expect(isIncidentEvent(planned)).toBe(true);
    expect(isIncidentEvent(record)).toBe(true);
    expect(isIncidentEvent({ ...planned, data: { ...planned.data, incidentId: stopId } } as DroverEvent)).toBe(false);
    expect(isIncidentEvent({ ...record, data: { ...record.data, incidentId: stopId } } as DroverEvent)).toBe(false);
    const run = evolveRunDoc(
      undefined,
      fact({ ...requeued, data: { ...requeued.data, incidentId: stopId } } as typeof requeued, 5, ids.sharedRun),
    );
    expect(run.incidentIds).toEqual([]);
    expect(run.forensicsIds).toEqual([requeued.data.forensicsId]);
  });
});
