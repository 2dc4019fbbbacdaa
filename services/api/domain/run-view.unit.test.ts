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
  it("given anything else undecodable too, or only something else, refuses to make a run up", () => {
    expect(
      undecodableSubmissionView("acme", "run-x", foldRun([]), [
        submitted,
        { seq: 9, subject: "drover.run.acme.run-x.started" },
      ]),
    ).toBeUndefined();
    expect(
      undecodableSubmissionView("acme", "run-x", foldRun([]), [{ seq: 9, subject: "drover.run.acme.run-x.started" }]),
    ).toBeUndefined();
    expect(undecodableSubmissionView("acme", "run-x", foldRun([]), [])).toBeUndefined();
  });
});
