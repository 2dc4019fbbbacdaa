import { describe, expect, it } from "vitest";
import { StepId, type DroverEvent } from "../../../contracts/index.ts";
import { exampleEvent, forensicsIds, ids } from "../../../test/support/example-events.ts";
import { evolveExecutionDoc } from "./execution-doc.ts";
import type { Fact } from "./fact.ts";
import { evolveIncidentDoc } from "./incident-doc.ts";
import { evolveRunDoc } from "./run-doc.ts";

const fact = <E extends DroverEvent>(event: E, seq: number, aggregateId: string): Fact<E> => ({ stream: "DROVER", seq, storedAt: "2026-01-02T03:04:06.000Z", aggregateId, event });
const step = (stepId: string) => { const e = exampleEvent("exec.step-completed"); return { ...e, data: { ...e.data, stepId: StepId.parse(stepId) } }; };

describe("read-model folds", () => {
  it("ignores a fact at or below the document's lastSeq (idempotent by stream sequence)", () => {
    const run = evolveRunDoc(undefined, fact(exampleEvent("run.submitted"), 3, ids.sharedRun));
    const admitted = evolveRunDoc(run, fact(exampleEvent("run.admitted"), 5, ids.sharedRun));
    expect(evolveRunDoc(admitted, fact(exampleEvent("run.admitted"), 5, ids.sharedRun))).toBe(admitted);
    expect(evolveRunDoc(admitted, fact(exampleEvent("run.cancelled"), 4, ids.sharedRun))).toBe(admitted);
    expect(admitted).toMatchObject({ status: "admitted", lastSeq: 5, labels: [{ key: "team", value: "ml" }], placements: [{ admittedSeq: 5, candidates: 1 }] });
  });

  it("counts a second step-completed of a step as a duplicate and keeps the first completion", () => {
    let x = evolveExecutionDoc(undefined, fact(exampleEvent("exec.started"), 1, ids.execution));
    x = evolveExecutionDoc(x, fact(step("a"), 2, ids.execution));
    x = evolveExecutionDoc(x, fact({ ...step("a"), data: { ...step("a").data, outputDigest: "b".repeat(64) } }, 3, ids.execution));
    x = evolveExecutionDoc(x, fact(step("b"), 4, ids.execution));
    expect(x).toMatchObject({ completedSteps: 2, duplicateCompletions: 1 });
    expect(x.steps[0]).toMatchObject({ stepId: "a", completions: 2, completedSeq: 2, outputDigest: "a".repeat(64) });
  });

  it("builds an incident whichever comes first, the plan or an item's forensics, and never moves it backwards", () => {
    const fx = exampleEvent("forensics.execution-recovery-completed");
    let inc = evolveIncidentDoc(undefined, fact(fx, 10, forensicsIds.inFlight), undefined);
    expect(inc).toMatchObject({ runtimeInstanceId: ids.runtime, tenantIds: [ids.tenant], items: [{ forensicsId: forensicsIds.inFlight, outcome: "completed" }] });
    inc = evolveIncidentDoc(inc, fact(exampleEvent("runtime.recovery-planned"), 11, ids.runtime), "owner-a");
    inc = evolveIncidentDoc(inc, fact(exampleEvent("runtime.suspected"), 12, ids.runtime), "owner-a");
    expect(inc).toMatchObject({ status: "recovery-planned", ownerTenantId: "owner-a", planned: { seq: 11, itemCount: 2 }, suspected: { seq: 12 } });
    expect(inc.items.map((i) => [i.forensicsId, i.plannedSeq, i.lastType ?? null])).toEqual([
      [forensicsIds.inFlight, 11, "forensics.execution-recovery-completed"], [forensicsIds.localQueued, 11, null]]);
  });
});
