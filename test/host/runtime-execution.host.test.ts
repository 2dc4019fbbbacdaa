import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DagDefinition } from "../../contracts/index.ts";
import { runRef, type StoredEvent } from "../../streams/index.ts";
import {
  admitAndDispatch,
  chainDag,
  journal,
  openControlPlaneDouble,
  waitForAggregate,
  waitForJournal,
  type ControlPlaneDouble,
} from "../support/control-plane-double.ts";
import { uniqueName } from "../support/isolation.ts";
import { startRuntimeProcess, type RuntimeProcess } from "../support/runtime-process.ts";

// Boundary: a real runtime process (tsx services/runtime/main.ts) and a real nats-server; the test
// appends the run events admission would, then sends DispatchRun over the runtime's transport.
const TENANT = "t-exec";
let cp: ControlPlaneDouble;
let tag: string;
const started: RuntimeProcess[] = [];

beforeAll(async () => {
  tag = uniqueName("rtexec");
  cp = await openControlPlaneDouble(inject("natsUrl"), tag);
});
afterAll(async () => {
  await Promise.all(started.map((p) => p.kill()));
  await cp.close();
});

const stepCompletions = (events: readonly StoredEvent[]) =>
  events.filter((e) => e.event.type === "exec.step-completed").map((e) => (e.event.data as { stepId: string }).stepId);

async function dispatch(rt: RuntimeProcess, dag: DagDefinition, sharedRunId: string, localRunId: string) {
  const dispatchedSeq = await admitAndDispatch(
    cp,
    {
      tenantId: TENANT,
      sharedRunId,
      localRunId,
      runtimeInstanceId: rt.runtimeInstanceId,
      hostIncarnation: rt.hostIncarnation,
      transport: rt.transport,
    },
    dag,
  );
  return rt.send({
    operation: "DispatchRun",
    payload: { sharedRunId, localRunId, tenantId: TENANT, dag, dispatchedSeq, correlationId: sharedRunId },
  } as never);
}

describe("runtime process executes a DAG durably", () => {
  it("runs a 50-step DAG to completion: one step-completed per step in dependency order, then exec completed and run completed", async () => {
    const rt = await startRuntimeProcess({
      natsUrl: inject("natsUrl"),
      streamTag: tag,
      runtimeInstanceId: uniqueName("rt"),
      transport: "http",
      tenantId: TENANT,
    });
    started.push(rt);
    const dag = chainDag(50, 0);
    const t0 = performance.now();
    const r = await dispatch(rt, dag, "run-fifty", "lr-fifty-1");
    expect(r.success).toBe(true);
    const executionId = String((r.payload.run as { executionId?: string }).executionId);
    const events = await waitForJournal(cp, TENANT, executionId, (es) =>
      es.some((e) => e.event.type === "exec.completed"),
    );
    const elapsedMs = performance.now() - t0;
    const completions = stepCompletions(events);
    expect(completions).toEqual(dag.steps.map((s) => s.id));
    expect(events[0]?.event.type).toBe("exec.started");
    expect(events.at(-1)?.event.type).toBe("exec.completed");
    expect(
      events.every((e) => e.event.writer.runtimeInstanceId === rt.runtimeInstanceId && e.event.writer.epoch === 0),
    ).toBe(true);
    const run = (
      await waitForAggregate(cp, runRef(TENANT, "run-fifty"), (es) => es.some((e) => e.event.type === "run.completed"))
    ).map((e) => e.event.type);
    expect(run).toEqual(["run.submitted", "run.admitted", "run.dispatched", "run.started", "run.completed"]);
    const firstStep = events.find((e) => e.event.type === "exec.step-completed");
    const lastStep = events.filter((e) => e.event.type === "exec.step-completed").at(-1);
    const checkpointSpanMs = (lastStep?.time.getTime() ?? 0) - (firstStep?.time.getTime() ?? 0);
    console.log(
      `[measure] 50 trivial steps: dispatch→exec completed ${elapsedMs.toFixed(0)} ms; journal checkpoints ${(49 / (checkpointSpanMs / 1000)).toFixed(0)} steps/s`,
    );
    const status = await rt.send({ operation: "GetRunStatus", payload: { localRunId: "lr-fifty-1" } } as never);
    expect(status.payload.run).toMatchObject({ state: "completed", executionId, completedSteps: 50 });
  });

  it("runs ready steps in parallel up to maxWorkersPerRun, and a flaky step's attempts are journaled with their retry time", async () => {
    const rt = await startRuntimeProcess({
      natsUrl: inject("natsUrl"),
      streamTag: tag,
      runtimeInstanceId: uniqueName("rt"),
      transport: "grpc",
      tenantId: TENANT,
      sizing: { workers: 4, maxWorkersPerRun: 3 },
    });
    started.push(rt);
    const dag = {
      name: "fan",
      steps: [
        ...["a", "b", "c", "d"].map((id) => ({
          id,
          kind: "compute",
          dependsOn: [],
          retry: { maxAttempts: 1, backoffMs: 0 },
          params: { durationMs: 150, busy: false },
        })),
        {
          id: "f",
          kind: "flaky",
          dependsOn: ["a", "b", "c", "d"],
          retry: { maxAttempts: 3, backoffMs: 50 },
          params: { durationMs: 0, failAttempts: 2 },
        },
      ],
    } as DagDefinition;
    const r = await dispatch(rt, dag, "run-fan", "lr-fan-1");
    const executionId = String((r.payload.run as { executionId?: string }).executionId);
    const events = await waitForJournal(cp, TENANT, executionId, (es) =>
      es.some((e) => e.event.type === "exec.completed"),
    );
    // With a cap of 3, the 4th root can only start after one of the first three completed.
    expect(stepCompletions(events).slice(0, 3).sort()).toEqual(["a", "b", "c"]);
    // ...and so d's 150 ms of work began only once a worker of this run was free: its completion is
    // stored at least a step's duration after the first completion (without the cap all four end together).
    const completedAt = (id: string) =>
      events
        .find((e) => e.event.type === "exec.step-completed" && (e.event.data as { stepId: string }).stepId === id)
        ?.time.getTime() ?? NaN;
    expect(completedAt("d") - Math.min(completedAt("a"), completedAt("b"), completedAt("c"))).toBeGreaterThanOrEqual(
      140,
    );
    const failures = events
      .filter((e) => e.event.type === "exec.step-failed")
      .map((e) => e.event.data as { stepId: string; attempt: number; retryAt?: string });
    expect(failures.map((f) => [f.stepId, f.attempt])).toEqual([
      ["f", 1],
      ["f", 2],
    ]);
    expect(failures.every((f) => f.retryAt !== undefined)).toBe(true);
    const done = events.find(
      (e) => e.event.type === "exec.step-completed" && (e.event.data as { stepId: string }).stepId === "f",
    );
    expect((done?.event.data as { attempt: number }).attempt).toBe(3);
    expect((await journal(cp, TENANT, executionId)).length).toBe(events.length);
  });
});
