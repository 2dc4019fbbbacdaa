import { describe, expect, it } from "vitest";
import {
  DagDefinition,
  HostIncarnation,
  LocalRunId,
  RuntimeInstanceId,
  SharedRunId,
  type DagInput,
  type Step,
} from "../../../contracts/index.ts";
import { validateExecution } from "../../../aggregates/replay-validation.ts";
import { execRef, runRef } from "../../../streams/subjects.ts";
import { eventData } from "../../../test/support/event-data.ts";
import { MemoryEventStore } from "../../../test/support/memory-event-store.ts";
import { Execution } from "./execution.ts";
import { executionIdFor, openFresh, openResume, type JournalEnv } from "./execution-open.ts";
import type { StepRunner } from "./step-runners.ts";
import { WorkerPool } from "./worker-pool.ts";

// Unit tier with an in-memory event store: proves the executor journals conditions and skips and
// resumes from them, NOT any transport (test/host/runtime-conditions.host.test.ts runs the real runtime).
const T = "t1";
let ids = 0;
const journalEnv = (store: MemoryEventStore, runtimeInstanceId = "rt-a"): JournalEnv => ({
  store,
  runtimeInstanceId: RuntimeInstanceId.parse(runtimeInstanceId),
  hostIncarnation: HostIncarnation.parse("pid:1:1"),
  clock: { now: () => new Date(1_000_000) },
  newEventId: () => `ev-${++ids}`,
  sleep: async () => undefined,
});
const payload = (dag: DagDefinition, localRunId = "l1") =>
  ({ sharedRunId: "r1", localRunId, tenantId: T, dag, dispatchedSeq: 0, correlationId: "c1" }) as Parameters<
    typeof openFresh
  >[1];
const recording = () => {
  const calls: string[] = [];
  const runner: StepRunner = async (step: Step) => {
    calls.push(step.id);
    return { ok: step.id };
  };
  return { calls, runner };
};
const executor = (runner: StepRunner) => ({
  workers: new WorkerPool(2),
  maxWorkersPerRun: 2,
  runStep: runner,
  clock: { now: () => new Date(1_000_000) },
  log: () => undefined,
});
const journal = async (store: MemoryEventStore) =>
  (await store.read(execRef(T, executionIdFor(SharedRunId.parse("r1"), LocalRunId.parse("l1"))))).events;

const dag = DagDefinition.parse({
  steps: [
    { id: "a", kind: "compute" },
    { id: "gate", kind: "compute", dependsOn: ["a"], when: 'input.region == "eu"' },
    { id: "after", kind: "compute", dependsOn: ["gate"] },
    { id: "report", kind: "compute", dependsOn: ["after", "a"], trigger: "all-done" },
  ],
} satisfies DagInput);

describe("Execution with conditions (in-memory store; proves no transport)", () => {
  it("a false when journals its result, skips the step and its default-trigger dependent with reasons, runs the all-done step, and replays as a match", async () => {
    const store = new MemoryEventStore();
    const { calls, runner } = recording();
    const opened = await openFresh(journalEnv(store), payload(dag));
    const input = { region: "us" };
    expect(await new Execution(executor(runner), opened, dag, 0, input).run()).toEqual({ state: "completed" });
    expect(calls).toEqual(["a", "report"]);
    const events = await journal(store);
    expect(events.map((e) => e.event.type)).toEqual([
      "exec.started",
      "exec.step-completed",
      "exec.condition-evaluated",
      "exec.step-skipped",
      "exec.step-skipped",
      "exec.step-completed",
      "exec.completed",
    ]);
    expect(events.map((e) => e.event.data).filter((d) => "reason" in d)).toEqual([
      { stepId: "gate", reason: "condition-false", detail: 'condition was false: input.region == "eu"' },
      { stepId: "after", reason: "dependency-skipped", detail: "dependency gate was skipped (trigger all-completed)" },
    ]);
    // (No digest: this runner's outputs are not the compute kind's; conditions re-derive without it.)
    const replay = { executionId: opened.executionId, journal: events, dag };
    expect(validateExecution({ ...replay, input: { value: input } }).kind).toBe("match");
    // Replayed over another input, the journaled result no longer re-derives.
    const other = validateExecution({ ...replay, input: { value: { region: "eu" } } });
    expect(other.kind === "divergence" && other.divergence.invariant).toBe("condition-rederivation");
    // The run's output names the skipped sink's output as null.
    const run = (await store.read(runRef(T, "r1"))).events.at(-1)!.event;
    expect(run.type).toBe("run.completed");
    expect((run.data as { output: unknown }).output).toEqual({ ok: "report" });
  });

  it("a condition that fails to evaluate fails the step without retry (condition-error) and the run names it", async () => {
    const store = new MemoryEventStore();
    const { calls, runner } = recording();
    const opened = await openFresh(journalEnv(store), payload(dag));
    const outcome = await new Execution(executor(runner), opened, dag, 0, { other: 1 }).run();
    expect(outcome).toMatchObject({ state: "failed", reason: "condition-error" });
    expect(calls).toEqual(["a"]);
    const failed = (await journal(store)).find((e) => e.event.type === "exec.step-failed")!.event.data;
    expect(failed).toMatchObject({ stepId: "gate", attempt: 1, code: "condition-error" });
    expect(validateExecution({ executionId: opened.executionId, journal: await journal(store), dag }).kind).toBe(
      "match",
    );
  });

  it("a resumed execution never re-evaluates a journaled condition: it acts on the recorded result", async () => {
    const store = new MemoryEventStore();
    const first = await openFresh(journalEnv(store), payload(dag));
    const emit = first.emit;
    await first.exec.append(
      emit(
        "exec.step-completed",
        eventData("exec.step-completed", {
          stepId: "a",
          attempt: 1,
          output: { ok: "a" },
          outputDigest: "a".repeat(64),
          durationMs: 1,
        }),
      ),
    );
    await first.exec.append(emit("exec.condition-evaluated", { stepId: "gate" as never, result: true }));
    await store.append(
      first.exec.ref,
      emit(
        "exec.paused-for-recovery",
        eventData("exec.paused-for-recovery", {
          forensicsId: `runtime-recovery:${first.executionId}:r1:l1`,
          incidentId: "i1",
          failedRuntimeInstanceId: "rt-a",
          newEpoch: 1,
        }),
      ),
      { expectedSeq: first.exec.lastSeq, msgId: "recovery" },
    );
    const resumed = await openResume(journalEnv(store, "rt-b"), {
      ...payload(dag, "l2"),
      executionId: first.executionId,
      epoch: 1,
      dispatchedSeq: await store.lastSeq(runRef(T, "r1")),
    });
    const { calls, runner } = recording();
    // This input would make the condition false: the journal's true is what counts.
    expect(await new Execution(executor(runner), resumed, dag, 0, { region: "us" }).run()).toEqual({
      state: "completed",
    });
    expect(calls).toEqual(["gate", "after", "report"]);
    const types = (await journal(store)).map((e) => e.event.type);
    expect(types.filter((t) => t === "exec.condition-evaluated")).toHaveLength(1);
  });
});
