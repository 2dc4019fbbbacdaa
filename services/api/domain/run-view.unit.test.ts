import { describe, expect, it } from "vitest";
import { foldRun } from "../../../aggregates/run.ts";
import { EXAMPLE_BUILDERS } from "../../../test/support/example-events.ts";
import { runView, undecodableSubmissionView } from "./run-view.ts";

const submitted = { seq: 7, subject: "drover.run.acme.run-x.submitted" };

describe("undecodableSubmissionView (given/when/then; pure, proves no transport)", () => {
  it("given only an undecodable submission, shows the run as submitted with no DAG", () => {
    expect(undecodableSubmissionView("acme", "run-x", foldRun([]), [submitted])).toMatchObject({
      status: "submitted",
      submittedSeq: 7,
      lastSeq: 7,
      dag: null,
    });
  });
  it("given an undecodable submission among other undecodable messages, shows the run from that submission", () => {
    expect(
      undecodableSubmissionView("acme", "run-x", foldRun([]), [
        { seq: 5, subject: "drover.run.acme.run-x.started" },
        submitted,
      ]),
    ).toMatchObject({ status: "submitted", submittedSeq: 7, lastSeq: 7 });
  });
  it("given only undecodable messages that are not a submission, or none, refuses to make a run up", () => {
    expect(
      undecodableSubmissionView("acme", "run-x", foldRun([]), [{ seq: 9, subject: "drover.run.acme.run-x.started" }]),
    ).toBeUndefined();
    expect(undecodableSubmissionView("acme", "run-x", foldRun([]), [])).toBeUndefined();
  });
});

describe("why a run waits in its view (pure, proves no transport)", () => {
  it("shows the latest queued-globally detail while the run is queued, and none once it is admitted", () => {
    const sub = {
      ...EXAMPLE_BUILDERS["run.submitted"](),
      data: { ...EXAMPLE_BUILDERS["run.submitted"]().data, priority: 7 },
    };
    const held = {
      ...EXAMPLE_BUILDERS["run.queued-globally"](),
      data: { reason: { code: "waiting-for-key" as const, detail: "waiting-for-key openai:gpt-4o 5/5" } },
    };
    const queued = runView(
      foldRun([
        { seq: 1, event: sub },
        { seq: 2, event: held },
      ]),
    );
    expect(queued).toMatchObject({ status: "queued", waitingFor: "waiting-for-key openai:gpt-4o 5/5", priority: 7 });
    const admitted = runView(
      foldRun([
        { seq: 1, event: sub },
        { seq: 2, event: held },
        { seq: 3, event: EXAMPLE_BUILDERS["run.admitted"]() },
      ]),
    );
    expect(admitted).toMatchObject({ status: "admitted", waitingFor: null });
  });
});
