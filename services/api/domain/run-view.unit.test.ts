import { describe, expect, it } from "vitest";
import { foldRun } from "../../../aggregates/run.ts";
import { undecodableSubmissionView } from "./run-view.ts";

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
