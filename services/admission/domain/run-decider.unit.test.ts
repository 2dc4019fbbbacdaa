import { describe, expect, it } from "vitest";
import type { DroverEvent, EventType } from "../../../contracts/index.ts";
import { foldRun } from "../../../aggregates/run.ts";
import { EXAMPLE_BUILDERS, ids, reason } from "../../../test/support/example-events.ts";
import { decideRun, NotApplicable, type AdmissionCommand } from "./run-decider.ts";
import { submissionSubjectMismatch } from "./submission-check.ts";

/** given(run history) → when(command) → then(events | not applicable). Pure: proves no transport. */
const given = (...types: EventType[]) =>
  foldRun(types.map((t, i) => ({ seq: i + 1, event: EXAMPLE_BUILDERS[t]() as DroverEvent })));
const admit: AdmissionCommand = {
  kind: "Admit",
  data: {
    runtimeInstanceId: ids.runtime,
    localRunId: ids.replacementLocalRun,
    reservationId: "r-2",
    candidates: [],
    recovery: false,
  },
};
const dispatched = (localRunId = ids.localRun): AdmissionCommand => ({
  kind: "MarkDispatched",
  data: { runtimeInstanceId: ids.runtime, localRunId, transport: "http", hostIncarnation: ids.host },
});

describe("admission run decider (given/when/then; proves no transport)", () => {
  it("admits a new submission onto a chosen runtime", () => {
    expect(decideRun(admit, given("run.submitted"))).toEqual([
      { type: "run.admitted", data: admit.kind === "Admit" ? admit.data : undefined },
    ]);
  });

  it("admits runs requeued by recovery, in-flight and local-queued alike", () => {
    for (const requeue of ["run.requeued-for-resume", "run.requeued-for-local-queued-recovery"] as const) {
      const s = given("run.submitted", "run.admitted", "run.dispatched", requeue);
      expect(decideRun(admit, s).map((e) => e.type)).toEqual(["run.admitted"]);
    }
  });

  it("refuses to admit a run that is already admitted, started or finished", () => {
    for (const last of ["run.admitted", "run.completed", "run.rejected"] as const) {
      expect(() => decideRun(admit, given("run.submitted", last))).toThrow(NotApplicable);
    }
    // A run is started by the runtime it was admitted onto (a runtime's run events count only there).
    expect(() => decideRun(admit, given("run.submitted", "run.admitted", "run.dispatched", "run.started"))).toThrow(
      NotApplicable,
    );
  });

  it("never reuses a LocalRunId for a second placement", () => {
    const s = given("run.submitted", "run.admitted", "run.dispatch-failed");
    const reuse: AdmissionCommand = {
      kind: "Admit",
      data: {
        runtimeInstanceId: ids.runtime,
        localRunId: ids.localRun,
        reservationId: "r-3",
        candidates: [],
        recovery: false,
      },
    };
    expect(() => decideRun(reuse, s)).toThrow(/already used/);
  });

  it("records dispatched only for the pending placement's LocalRunId and runtime", () => {
    const s = given("run.submitted", "run.admitted");
    expect(decideRun(dispatched(), s).map((e) => e.type)).toEqual(["run.dispatched"]);
    expect(() => decideRun(dispatched(ids.replacementLocalRun), s)).toThrow(NotApplicable);
    const other: AdmissionCommand = {
      kind: "MarkDispatched",
      data: {
        runtimeInstanceId: ids.replacementRuntime,
        localRunId: ids.localRun,
        transport: "http",
        hostIncarnation: ids.host,
      },
    };
    expect(() => decideRun(other, s)).toThrow(/differs/);
  });

  it("records a dispatch failure for an admitted or dispatched placement, and not after the run started", () => {
    const fail: AdmissionCommand = {
      kind: "MarkDispatchFailed",
      data: { runtimeInstanceId: ids.runtime, localRunId: ids.localRun, reason: reason("runtime-unreachable") },
    };
    expect(decideRun(fail, given("run.submitted", "run.admitted"))).toHaveLength(1);
    expect(decideRun(fail, given("run.submitted", "run.admitted", "run.dispatched"))).toHaveLength(1);
    expect(() => decideRun(fail, given("run.submitted", "run.admitted", "run.dispatched", "run.started"))).toThrow(
      NotApplicable,
    );
  });

  it("queues globally with a scale-out request once, and adds nothing when re-queued for the same reason", () => {
    const q: AdmissionCommand = {
      kind: "QueueGlobally",
      reason: reason("no-visible-capacity"),
      scaleOutRequestId: ids.scaleOut,
    };
    expect(decideRun(q, given("run.submitted")).map((e) => e.type)).toEqual([
      "run.queued-globally",
      "run.scale-out-requested",
    ]);
    expect(decideRun(q, given("run.submitted", "run.queued-globally", "run.scale-out-requested"))).toEqual([]);
  });

  it("rejects only a new submission", () => {
    const r: AdmissionCommand = { kind: "Reject", reason: reason("dag-invalid") };
    expect(decideRun(r, given("run.submitted")).map((e) => e.type)).toEqual(["run.rejected"]);
    expect(() => decideRun(r, given("run.submitted", "run.admitted"))).toThrow(NotApplicable);
  });
});

describe("a trusted producer's submitted against the subject it was published on (pure; proves no transport)", () => {
  const subject = { tenantId: "t-blue", sharedRunId: "run-1" };
  it("accepts an envelope that names the subject's tenant and run", () => {
    expect(submissionSubjectMismatch(subject, { tenantId: "t-blue", data: { sharedRunId: "run-1" } })).toBeUndefined();
  });
  it("names every disagreement: another tenant, no tenant, another run", () => {
    expect(submissionSubjectMismatch(subject, { tenantId: "t-red", data: { sharedRunId: "run-1" } })).toMatch(
      /tenantId "t-red" is not the subject's tenant t-blue/,
    );
    expect(submissionSubjectMismatch(subject, { data: { sharedRunId: "run-1" } })).toMatch(/tenantId null/);
    expect(submissionSubjectMismatch(subject, { tenantId: "t-red", data: { sharedRunId: "run-2" } })).toMatch(
      /tenantId "t-red".*; data\.sharedRunId run-2 is not the subject's run run-1/,
    );
  });
});
