import { describe, expect, it } from "vitest";
import { exampleCommandTarget, exampleDispatchPayload, ids } from "../test/support/example-events.ts";
import { DagMemo, isCheckedDag } from "./checked-dag.ts";
import { parseRuntimeCommand, RuntimeCommand } from "./runtime-commands.ts";

const target = exampleCommandTarget;
const dispatch = exampleDispatchPayload;
const resume = { ...dispatch, executionId: ids.execution, epoch: 1 };
const json = (v: unknown): unknown => JSON.parse(JSON.stringify(v));

const VALID: Record<string, unknown> = {
  DispatchRun: { operation: "DispatchRun", ...target, payload: dispatch },
  ResumeExecution: { operation: "ResumeExecution", ...target, payload: resume },
  GetRunStatus: { operation: "GetRunStatus", ...target, payload: { localRunId: ids.localRun } },
  Drain: { operation: "Drain", ...target, payload: {} },
};
const cyclic = { steps: [{ id: "a", kind: "compute", dependsOn: ["a"] }] };
const INVALID: Record<string, unknown> = {
  "an unknown payload field": { ...(VALID.DispatchRun as object), payload: { ...dispatch, extra: 1 } },
  "an unknown envelope field": { ...(VALID.DispatchRun as object), tenantOverride: "t" },
  "a cyclic DAG": { ...(VALID.DispatchRun as object), payload: { ...dispatch, dag: cyclic } },
  "no DAG": { ...(VALID.DispatchRun as object), payload: { ...dispatch, dag: undefined } },
  "a DAG that is a string": { ...(VALID.DispatchRun as object), payload: { ...dispatch, dag: "x" } },
  "dispatched sequence 0": { ...(VALID.DispatchRun as object), payload: { ...dispatch, dispatchedSeq: 0 } },
  "no target": { operation: "DispatchRun", correlationId: "corr-1", payload: dispatch },
  "a null payload": { operation: "DispatchRun", ...target, payload: null },
  "resume epoch 0": { ...(VALID.ResumeExecution as object), payload: { ...resume, epoch: 0 } },
  "a resume without an execution": { operation: "ResumeExecution", ...target, payload: dispatch },
  "a resume with a stray field": { ...(VALID.ResumeExecution as object), payload: { ...resume, extra: 1 } },
};

describe("parseRuntimeCommand (a command's DAG checked once per distinct DAG)", () => {
  it.each(Object.entries(VALID))("answers a valid %s as RuntimeCommand does, cold and warm", (_op, command) => {
    const dags = new DagMemo();
    const full = RuntimeCommand.safeParse(json(command));
    expect(full.success).toBe(true);
    for (let k = 0; k < 2; k++) {
      const r = parseRuntimeCommand(json(command), dags);
      expect(r.success).toBe(true);
      expect(r.data).toEqual(full.data);
    }
  });

  it.each(Object.entries(INVALID))(
    "refuses %s with the full parse's issues, even with its DAG known",
    (_w, command) => {
      const full = RuntimeCommand.safeParse(json(command));
      expect(full.success).toBe(false);
      const warm = new DagMemo();
      expect(parseRuntimeCommand(json(VALID.DispatchRun), warm).success).toBe(true);
      for (const dags of [new DagMemo(), warm]) {
        const r = parseRuntimeCommand(json(command), dags);
        expect(r.success).toBe(false);
        expect(r.error?.issues).toEqual(full.error?.issues);
      }
    },
  );

  it("gives equal DAGs of different commands one checked, frozen object", () => {
    const dags = new DagMemo();
    const a = parseRuntimeCommand(json(VALID.DispatchRun), dags);
    const b = parseRuntimeCommand(json(VALID.ResumeExecution), dags);
    if (!a.success || !b.success || a.data.operation !== "DispatchRun" || b.data.operation !== "ResumeExecution")
      throw new Error("expected a dispatch and a resume");
    expect(b.data.payload.dag).toBe(a.data.payload.dag);
    expect(isCheckedDag(a.data.payload.dag)).toBe(true);
    expect(Object.isFrozen(a.data.payload.dag.steps[0])).toBe(true);
  });
});
