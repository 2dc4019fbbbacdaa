import { describe, expect, it } from "vitest";
import { exampleCommandTarget, exampleDispatchPayload, ids } from "../test/support/example-events.ts";
import { ROUTING_HEADER, RuntimeCommand, RuntimeCommandResult } from "./runtime-commands.ts";

const target = exampleCommandTarget;
const dispatch = exampleDispatchPayload;

/** One valid command per operation of runtime.md "Command API". */
const VALID: Record<string, unknown> = {
  DispatchRun: { operation: "DispatchRun", ...target, payload: dispatch },
  ResumeExecution: {
    operation: "ResumeExecution",
    ...target,
    payload: { ...dispatch, executionId: ids.execution, epoch: 1 },
  },
  GetRunStatus: { operation: "GetRunStatus", ...target, payload: { localRunId: ids.localRun } },
  GetQueueStatus: { operation: "GetQueueStatus", ...target, payload: {} },
  PauseQueue: { operation: "PauseQueue", ...target, payload: {} },
  ResumeQueue: { operation: "ResumeQueue", ...target, payload: {} },
  CancelRun: { operation: "CancelRun", ...target, payload: { localRunId: ids.localRun } },
  Drain: { operation: "Drain", ...target, payload: {} },
};

describe("runtime command envelope", () => {
  it("defines exactly the operations of runtime.md", () => {
    expect(RuntimeCommand.options.map((o) => o.shape.operation.value).sort()).toEqual(Object.keys(VALID).sort());
  });

  it.each(Object.entries(VALID))("accepts a valid %s naming its exact target", (operation, command) => {
    const parsed = RuntimeCommand.parse(command);
    expect(parsed.operation).toBe(operation);
    expect(parsed.runtimeInstanceId).toBe(ids.runtime);
  });

  it.each(Object.entries(VALID))(
    "rejects %s without a target runtimeInstanceId, with an invalid one, or with unknown fields",
    (_op, command) => {
      const { runtimeInstanceId: _t, ...untargeted } = command as Record<string, unknown>;
      expect(RuntimeCommand.safeParse(untargeted).success).toBe(false);
      expect(RuntimeCommand.safeParse({ ...(command as object), runtimeInstanceId: "rt.*" }).success).toBe(false);
      expect(RuntimeCommand.safeParse({ ...(command as object), tenantOverride: "t" }).success).toBe(false);
    },
  );

  it.each(["Shutdown", "dispatchRun", "", undefined])("rejects the unknown operation %j", (operation) => {
    const r = RuntimeCommand.safeParse({ operation, ...target, payload: {} });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(["operation"]);
  });

  it("rejects a payload that belongs to another operation", () => {
    expect(
      RuntimeCommand.safeParse({ operation: "Drain", ...target, payload: { localRunId: ids.localRun } }).success,
    ).toBe(false);
    expect(RuntimeCommand.safeParse({ operation: "CancelRun", ...target, payload: {} }).success).toBe(false);
  });

  it("rejects a DispatchRun whose DAG is invalid or whose dispatched sequence is not positive", () => {
    const cyclic = { steps: [{ id: "a", kind: "compute", dependsOn: ["a"] }] };
    expect(
      RuntimeCommand.safeParse({ ...(VALID.DispatchRun as object), payload: { ...dispatch, dag: cyclic } }).success,
    ).toBe(false);
    expect(
      RuntimeCommand.safeParse({ ...(VALID.DispatchRun as object), payload: { ...dispatch, dispatchedSeq: 0 } })
        .success,
    ).toBe(false);
  });

  it("rejects a ResumeExecution without an ExecutionId or with epoch 0 (recovery epochs start at 1)", () => {
    const { executionId: _e, ...noExec } = { ...dispatch, executionId: ids.execution, epoch: 1 };
    expect(RuntimeCommand.safeParse({ operation: "ResumeExecution", ...target, payload: noExec }).success).toBe(false);
    expect(
      RuntimeCommand.safeParse({
        operation: "ResumeExecution",
        ...target,
        payload: { ...dispatch, executionId: ids.execution, epoch: 0 },
      }).success,
    ).toBe(false);
  });

  it("routes on the documented header", () => {
    expect(ROUTING_HEADER).toBe("x-drover-runtime-instance-id");
  });
});

describe("runtime command result", () => {
  const ok = {
    success: true,
    operation: "GetQueueStatus",
    runtimeInstanceId: ids.runtime,
    hostIncarnation: ids.host,
    payload: { queuedRuns: 0 },
    timings: { receivedAt: "2026-01-02T03:04:05.000Z", handledMs: 1.5 },
  };

  it("names the responder and its host incarnation", () => {
    expect(RuntimeCommandResult.parse(ok)).toMatchObject({ runtimeInstanceId: ids.runtime, hostIncarnation: ids.host });
    const { runtimeInstanceId: _r, ...anonymous } = ok;
    expect(RuntimeCommandResult.safeParse(anonymous).success).toBe(false);
    const { hostIncarnation: _h, ...noIncarnation } = ok;
    expect(RuntimeCommandResult.safeParse(noIncarnation).success).toBe(false);
  });

  it("carries failures as catalogued codes only", () => {
    expect(
      RuntimeCommandResult.parse({
        ...ok,
        success: false,
        failureReason: "runtime-misdirected",
        failureDetail: "header names rt-x",
      }).failureReason,
    ).toBe("runtime-misdirected");
    expect(RuntimeCommandResult.safeParse({ ...ok, success: false, failureReason: "wrong-host" }).success).toBe(false);
  });
});
