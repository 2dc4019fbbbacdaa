import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DagDefinition, LocalRunId, SharedRunId, type DagInput, type Transport } from "../../contracts/index.ts";
import { execRef, runRef, type StoredEvent } from "../../streams/index.ts";
import { dagDigest, executionIdFor } from "../../services/runtime/index.ts";
import {
  admitAndDispatch,
  chainDag,
  journal,
  openControlPlaneDouble,
  pauseForRecovery,
  testEvent,
  waitForAggregate,
  waitForJournal,
  type ControlPlaneDouble,
} from "../support/control-plane-double.ts";
import { uniqueName } from "../support/isolation.ts";
import { startRuntimeProcess, type RuntimeProcess } from "../support/runtime-process.ts";

// Boundary: real runtime processes killed (SIGKILL) or paused (SIGSTOP/SIGCONT) by the OS, a real
// nats-server, and the execution journal as the only truth. The test plays recovery and admission
// by appending their events (paused-for-recovery + requeued-for-resume, admitted + dispatched).
const TENANT = "t-rec";
let cp: ControlPlaneDouble;
let tag: string;
const started: RuntimeProcess[] = [];

beforeAll(async () => {
  tag = uniqueName("rtrec");
  cp = await openControlPlaneDouble(inject("natsUrl"), tag);
});
afterAll(async () => {
  await Promise.all(started.map((p) => p.kill()));
  await cp.close();
});

const completedIds = (events: readonly StoredEvent[]) =>
  events.filter((e) => e.event.type === "exec.step-completed").map((e) => (e.event.data as { stepId: string }).stepId);

async function runtime(transport: Transport): Promise<RuntimeProcess> {
  const rt = await startRuntimeProcess({
    natsUrl: inject("natsUrl"),
    streamTag: tag,
    runtimeInstanceId: uniqueName("rt"),
    transport,
    tenantId: TENANT,
  });
  started.push(rt);
  return rt;
}

async function dispatchFresh(
  rt: RuntimeProcess,
  dag: DagDefinition,
  sharedRunId: string,
  localRunId: string,
): Promise<string> {
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
  const r = await rt.send({
    operation: "DispatchRun",
    payload: { sharedRunId, localRunId, tenantId: TENANT, dag, dispatchedSeq, correlationId: sharedRunId },
  } as never);
  expect(r.success).toBe(true);
  return String((r.payload.run as { executionId: string }).executionId);
}

/** Recovery + admission for an in-flight execution, then ResumeExecution on `to`; returns the time the command was sent. */
async function recoverOnto(
  to: RuntimeProcess,
  o: {
    dag: DagDefinition;
    sharedRunId: string;
    executionId: string;
    failed: RuntimeProcess;
    failedLocalRunId: string;
    localRunId: string;
    epoch: number;
  },
) {
  await pauseForRecovery(cp, {
    tenantId: TENANT,
    sharedRunId: o.sharedRunId,
    executionId: o.executionId,
    failedRuntimeInstanceId: o.failed.runtimeInstanceId,
    failedLocalRunId: o.failedLocalRunId,
    newEpoch: o.epoch,
  });
  const dispatchedSeq = await admitAndDispatch(
    cp,
    {
      tenantId: TENANT,
      sharedRunId: o.sharedRunId,
      localRunId: o.localRunId,
      runtimeInstanceId: to.runtimeInstanceId,
      hostIncarnation: to.hostIncarnation,
      transport: to.transport,
      resumeExecutionId: o.executionId,
    },
    o.dag,
  );
  const sentAt = performance.now();
  const r = await to.send({
    operation: "ResumeExecution",
    payload: {
      sharedRunId: o.sharedRunId,
      localRunId: o.localRunId,
      tenantId: TENANT,
      dag: o.dag,
      dispatchedSeq,
      correlationId: o.sharedRunId,
      executionId: o.executionId,
      epoch: o.epoch,
    },
  } as never);
  expect(r.success, JSON.stringify(r)).toBe(true);
  return sentAt;
}

function expectExactlyOnePerStep(events: readonly StoredEvent[], dag: DagDefinition) {
  const ids = completedIds(events);
  expect(ids.length).toBe(dag.steps.length);
  expect(new Set(ids)).toEqual(new Set(dag.steps.map((s) => s.id)));
}

describe("crash recovery: a replacement runtime continues the same execution", () => {
  it("after SIGKILL with ≥ 25 durable steps, a new runtime resumes the same ExecutionId from the first incomplete step; one step-completed per step", async () => {
    const dag = chainDag(50, 40);
    const a = await runtime("http");
    const executionId = await dispatchFresh(a, dag, "run-kill", "lr-kill-1");
    await waitForJournal(cp, TENANT, executionId, (es) => completedIds(es).length >= 25);
    await a.kill();
    const beforeResume = completedIds(await journal(cp, TENANT, executionId));
    expect(beforeResume.length).toBeGreaterThanOrEqual(25);
    const firstIncomplete = dag.steps.find((s) => !beforeResume.includes(s.id))?.id;

    const b = await runtime("grpc");
    const sentAt = await recoverOnto(b, {
      dag,
      sharedRunId: "run-kill",
      executionId,
      failed: a,
      failedLocalRunId: "lr-kill-1",
      localRunId: "lr-kill-2",
      epoch: 1,
    });
    const first = await b.waitForLine((l) => l.event === "first-step-started");
    const toFirstStepMs = performance.now() - sentAt;
    const events = await waitForJournal(cp, TENANT, executionId, (es) =>
      es.some((e) => e.event.type === "exec.completed"),
    );

    expect(first).toMatchObject({
      executionId,
      stepId: firstIncomplete,
      attempt: 1,
      resumedAfter: beforeResume.length,
    });
    const resumedAt = events.findIndex((e) => e.event.type === "exec.resumed");
    expect(events[resumedAt]?.event.data).toMatchObject({
      runtimeInstanceId: b.runtimeInstanceId,
      localRunId: "lr-kill-2",
      epoch: 1,
      completedSteps: beforeResume.length,
    });
    expect(completedIds(events.slice(resumedAt))[0]).toBe(firstIncomplete);
    expectExactlyOnePerStep(events, dag);
    // Every write after the recovery fence is the replacement's, at the new epoch.
    expect(
      events
        .slice(resumedAt)
        .every((e) => e.event.writer.runtimeInstanceId === b.runtimeInstanceId && e.event.writer.epoch === 1),
    ).toBe(true);
    const run = (
      await waitForAggregate(cp, runRef(TENANT, "run-kill"), (es) => es.some((e) => e.event.type === "run.completed"))
    ).map((e) => e.event);
    expect(
      run.filter((e) => e.type === "run.started").map((e) => (e.data as { executionId: string }).executionId),
    ).toEqual([executionId, executionId]);
    expect(run.at(-1)?.type).toBe("run.completed");
    console.log(
      `[measure] ResumeExecution → first resumed step started: ${toFirstStepMs.toFixed(0)} ms (runtime-side ${String(first.sinceOpenMs)} ms)`,
    );
  });

  it("a SIGSTOPped runtime revived after recovery gets its next append rejected, stops with execution-ownership-lost, and writes no duplicate step", async () => {
    const dag = chainDag(40, 40);
    const a = await runtime("grpc");
    const executionId = await dispatchFresh(a, dag, "run-stop", "lr-stop-1");
    await waitForJournal(cp, TENANT, executionId, (es) => completedIds(es).length >= 10);
    a.pause();
    const b = await runtime("http");
    await recoverOnto(b, {
      dag,
      sharedRunId: "run-stop",
      executionId,
      failed: a,
      failedLocalRunId: "lr-stop-1",
      localRunId: "lr-stop-2",
      epoch: 1,
    });
    await waitForJournal(cp, TENANT, executionId, (es) => es.some((e) => e.event.type === "exec.completed"));

    a.resume();
    const lost = await a.waitForLine((l) => l.event === "execution-ownership-lost");
    expect(lost).toMatchObject({ executionId });
    const status = await a.send({ operation: "GetRunStatus", payload: { localRunId: "lr-stop-1" } } as never);
    expect(status.payload.run).toMatchObject({
      state: "failed",
      failureReason: "execution-ownership-lost",
      executionId,
    });
    // The queue slot is free again: the revived runtime reports no running run.
    expect((await a.send({ operation: "GetQueueStatus", payload: {} } as never)).payload.queue).toMatchObject({
      runningRuns: 0,
    });

    const events = await journal(cp, TENANT, executionId);
    expectExactlyOnePerStep(events, dag);
    const fence = events.findIndex((e) => e.event.type === "exec.paused-for-recovery");
    expect(events.slice(fence + 1).some((e) => e.event.writer.runtimeInstanceId === a.runtimeInstanceId)).toBe(false);
    expect(events.at(-1)?.event.type).toBe("exec.completed");
  });

  it("a sleep step is a durable timer: SIGKILLed mid-sleep, the replacement wakes at the journalled time instead of sleeping the whole duration again", async () => {
    // Killed 4 s into a 10 s sleep: sleeping it all again would end ≥ 4 s after the wake-up, the
    // durable timer ends at it; 6 s is left for the replacement to start under load.
    const SLEEP_MS = 10_000;
    const dag = DagDefinition.parse({
      steps: [
        { id: "first", kind: "compute", params: { durationMs: 10 } },
        { id: "nap", kind: "sleep", dependsOn: ["first"], params: { durationMs: SLEEP_MS } },
      ],
    } satisfies DagInput);
    const a = await runtime("http");
    const executionId = await dispatchFresh(a, dag, "run-nap", "lr-nap-1");
    const timer = (
      await waitForJournal(cp, TENANT, executionId, (es) => es.some((e) => e.event.type === "exec.timer-started"))
    ).find((e) => e.event.type === "exec.timer-started")!;
    const wakeAt = Date.parse((timer.event.data as { wakeAt: string }).wakeAt);
    expect(wakeAt - timer.time.getTime()).toBeGreaterThan(SLEEP_MS - 1_000);
    await new Promise((r) => setTimeout(r, 4_000));
    await a.kill();
    const b = await runtime("grpc");
    await recoverOnto(b, {
      dag,
      sharedRunId: "run-nap",
      executionId,
      failed: a,
      failedLocalRunId: "lr-nap-1",
      localRunId: "lr-nap-2",
      epoch: 1,
    });
    const events = await waitForJournal(cp, TENANT, executionId, (es) =>
      es.some((e) => e.event.type === "exec.completed"),
    );
    const napDone = events.find(
      (e) => e.event.type === "exec.step-completed" && (e.event.data as { stepId: string }).stepId === "nap",
    )!;
    // Woke at the journalled time (runtime and server share this machine's clock).
    expect(napDone.time.getTime()).toBeGreaterThanOrEqual(wakeAt - 50);
    expect(napDone.time.getTime()).toBeLessThan(wakeAt + 2_000);
    expect(events.filter((e) => e.event.type === "exec.timer-started")).toHaveLength(1);
    expect(napDone.event.writer.runtimeInstanceId).toBe(b.runtimeInstanceId);
    expectExactlyOnePerStep(events, dag);
  });

  it("refuses ResumeExecution whose epoch is not the one recovery moved the run to, writing nothing", async () => {
    const dag = chainDag(3, 0);
    const a = await runtime("http");
    const executionId = await dispatchFresh(a, dag, "run-epoch", "lr-epoch-1");
    await waitForJournal(cp, TENANT, executionId, (es) => es.some((e) => e.event.type === "exec.completed"));
    const before = await journal(cp, TENANT, executionId);
    const r = await a.send({
      operation: "ResumeExecution",
      payload: {
        sharedRunId: "run-epoch",
        localRunId: "lr-epoch-2",
        tenantId: TENANT,
        dag,
        dispatchedSeq: 1,
        correlationId: "c",
        executionId,
        epoch: 2,
      },
    } as never);
    expect(r).toMatchObject({ success: false, failureReason: "resume-epoch-mismatch" });
    expect((await journal(cp, TENANT, executionId)).length).toBe(before.length);
  });

  it("an execution whose journal ended before its run did (the host died between the two terminal events) is finished by a resume at the next epoch: run completed from the journal, no step re-run, nothing appended to the journal", async () => {
    const dag = chainDag(2, 0);
    const [sharedRunId, failedLocalRunId] = ["run-ended", "lr-ended-1"];
    const executionId = executionIdFor(SharedRunId.parse(sharedRunId), LocalRunId.parse(failedLocalRunId));
    const gone = { runtimeInstanceId: uniqueName("rt-gone"), hostIncarnation: "pid:1:1", transport: "http" as const };
    const dispatchedSeq = await admitAndDispatch(
      cp,
      { tenantId: TENANT, sharedRunId, localRunId: failedLocalRunId, ...gone },
      dag,
    );
    // What the dead host had written: run started, and its whole journal up to exec completed.
    await cp.store.append(
      runRef(TENANT, sharedRunId),
      testEvent(
        "run.started",
        { executionId, localRunId: failedLocalRunId, runtimeInstanceId: gone.runtimeInstanceId },
        TENANT,
      ),
      { expectedSeq: dispatchedSeq },
    );
    const ended = [
      testEvent(
        "exec.started",
        {
          sharedRunId,
          localRunId: failedLocalRunId,
          runtimeInstanceId: gone.runtimeInstanceId,
          dagDigest: dagDigest(dag),
          stepCount: 2,
          epoch: 0,
        },
        TENANT,
      ),
      ...["s01", "s02"].map((stepId, i) =>
        testEvent(
          "exec.step-completed",
          { stepId, attempt: 1, output: { step: stepId }, outputDigest: String(i + 1).repeat(64), durationMs: 1 },
          TENANT,
        ),
      ),
      testEvent("exec.completed", { outputDigest: "d".repeat(64) }, TENANT),
    ];
    for (const [i, e] of ended.entries())
      await cp.store.append(execRef(TENANT, executionId), e, {
        expectedSeq: i === 0 ? 0 : await cp.store.lastSeq(execRef(TENANT, executionId)),
      });
    const before = await journal(cp, TENANT, executionId);
    // Recovery's transition for an ended journal: the run alone moves, to the journal's epoch + 1.
    await cp.store.append(
      runRef(TENANT, sharedRunId),
      testEvent(
        "run.requeued-for-resume",
        {
          forensicsId: `runtime-recovery:${executionId}:${sharedRunId}:${failedLocalRunId}`,
          incidentId: `inc-${gone.runtimeInstanceId}`,
          executionId,
          failedRuntimeInstanceId: gone.runtimeInstanceId,
          failedLocalRunId,
          newEpoch: 1,
        },
        TENANT,
      ),
      { expectedSeq: await cp.store.lastSeq(runRef(TENANT, sharedRunId)) },
    );
    const b = await runtime("grpc");
    const resumeSeq = await admitAndDispatch(
      cp,
      {
        tenantId: TENANT,
        sharedRunId,
        localRunId: "lr-ended-2",
        runtimeInstanceId: b.runtimeInstanceId,
        hostIncarnation: b.hostIncarnation,
        transport: b.transport,
        resumeExecutionId: executionId,
      },
      dag,
    );
    const r = await b.send({
      operation: "ResumeExecution",
      payload: {
        sharedRunId,
        localRunId: "lr-ended-2",
        tenantId: TENANT,
        dag,
        dispatchedSeq: resumeSeq,
        correlationId: sharedRunId,
        executionId,
        epoch: 1,
      },
    } as never);
    expect(r.success, JSON.stringify(r)).toBe(true);
    const run = await waitForAggregate(cp, runRef(TENANT, sharedRunId), (es) =>
      es.some((e) => e.event.type === "run.completed"),
    );
    const completed = run.find((e) => e.event.type === "run.completed")!.event;
    expect(completed.writer.runtimeInstanceId).toBe(b.runtimeInstanceId);
    expect(completed.data).toMatchObject({
      executionId,
      localRunId: "lr-ended-2",
      outputDigest: "d".repeat(64),
      output: { step: "s02" },
    });
    expect(await journal(cp, TENANT, executionId)).toEqual(before);
  });
});
