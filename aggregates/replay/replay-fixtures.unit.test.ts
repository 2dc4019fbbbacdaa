import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DagDefinition } from "../../contracts/index.ts";
import { FIXTURES, recordedLog, sha256Hex } from "../../test/support/recorded-logs.ts";
import { validateExecution, validateIncidentLog, validateRunLog, type Invariant } from "../replay-validation.ts";

// Unit: replay validation over the recorded logs in test/fixtures (see its README for provenance).
const digest = sha256Hex;

describe("replay validation of sound recorded logs", () => {
  it("the recorded crash-and-resume journal (two real runtime processes) matches its DAG, epochs, attempts and re-derived outputs", () => {
    const dag = DagDefinition.parse(
      JSON.parse(readFileSync(`${FIXTURES}/exec-journal-sigkill-resumed.dag.json`, "utf8")),
    );
    const journal = recordedLog("exec-journal-sigkill-resumed.jsonl");
    expect(validateExecution({ executionId: "exec-5dc444c06c6b79ac0b2cff0e0cabd918", journal, dag, digest })).toEqual({
      kind: "match",
      scope: "execution exec-5dc444c06c6b79ac0b2cff0e0cabd918",
      checked: 14,
      notes: [],
    });
  });

  it("a clean run (queued globally, scaled out, admitted, one flaky retry) matches at run and execution level", () => {
    expect(validateRunLog("run-clean", recordedLog("run-clean.jsonl"), { digest })).toMatchObject({
      kind: "match",
      notes: [],
    });
  });

  it("a crash+resume incident matches: the in-flight run keeps its ExecutionId, the local-queued run gets a new LocalRunId and ExecutionId, every item has forensics", () => {
    const log = recordedLog("run-crash-resume.jsonl");
    expect(validateRunLog("run-fixture", log, { digest })).toMatchObject({ kind: "match" });
    expect(validateRunLog("run-fixture-q", log, { digest })).toMatchObject({ kind: "match" });
    expect(validateIncidentLog("inc-rt-fixture-a", log, { digest })).toMatchObject({
      kind: "match",
      notes: ["2 recovery item(s)"],
    });
  });
});

describe("replay validation reports the first divergence of a defective log at its stream sequence", () => {
  const cases: [
    file: string,
    validate: "run" | "incident",
    id: string,
    invariant: Invariant,
    seq: number,
    message: RegExp,
  ][] = [
    [
      "run-defect-duplicate-step-completed.jsonl",
      "run",
      "run-clean",
      "duplicate-step-completed",
      19,
      /second step-completed for step b .*already completed at seq 16/,
    ],
    [
      "run-defect-step-before-dependency.jsonl",
      "run",
      "run-clean",
      "dependency-order",
      18,
      /step d completed at seq 18 before its dependency c \(completed later, at seq 19\)/,
    ],
    [
      "run-defect-duplicate-run-completed.jsonl",
      "run",
      "run-clean",
      "duplicate-run-completed",
      22,
      /already completed at seq 21/,
    ],
    [
      "run-defect-stale-epoch-write.jsonl",
      "run",
      "run-fixture",
      "stale-epoch",
      25,
      /written by rt-fixture-a .* at epoch 0 after paused-for-recovery at seq 23 moved ownership to epoch 1/,
    ],
    [
      "run-defect-write-after-fenced.jsonl",
      "run",
      "run-fixture",
      "write-after-fenced",
      23,
      /written by rt-fixture-a from host incarnation pid:20114:200998, fenced at seq 22/,
    ],
    [
      "run-defect-write-after-fenced.jsonl",
      "incident",
      "inc-rt-fixture-a",
      "write-after-fenced",
      23,
      /fenced at seq 22/,
    ],
    [
      "run-defect-resume-new-execution.jsonl",
      "run",
      "run-fixture",
      "resume-new-execution",
      39,
      /must continue exec-5dc444c06c6b79ac0b2cff0e0cabd918/,
    ],
    [
      "run-defect-missing-forensics.jsonl",
      "incident",
      "inc-rt-fixture-a",
      "missing-forensics-record",
      28,
      /runtime-recovery:local-queued:run-fixture-q:lr-fixture-q-1 .*has no forensics record/,
    ],
  ];
  it.each(cases)("%s (%s %s) → %s at seq %i", (file, validate, id, invariant, seq, message) => {
    const log = recordedLog(file);
    const r = validate === "run" ? validateRunLog(id, log, { digest }) : validateIncidentLog(id, log, { digest });
    expect(r.kind).toBe("divergence");
    if (r.kind !== "divergence") return;
    expect({ invariant: r.divergence.invariant, seq: r.divergence.seq }).toEqual({ invariant, seq });
    expect(r.divergence.message).toMatch(message);
  });

  it("a stale-epoch write by the fenced incarnation is also reported by the incident check, at the same sequence", () => {
    const r = validateIncidentLog("inc-rt-fixture-a", recordedLog("run-defect-stale-epoch-write.jsonl"), { digest });
    expect(r).toMatchObject({ kind: "divergence", divergence: { invariant: "write-after-fenced", seq: 25 } });
  });
});
