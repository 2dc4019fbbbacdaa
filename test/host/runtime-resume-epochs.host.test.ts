import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalRunId, SharedRunId } from "../../contracts/index.ts";
import { execRef, runRef } from "../../streams/index.ts";
import { dagDigest, executionIdFor } from "../../services/runtime/index.ts";
import {
  admitAndDispatch,
  chainDag,
  journal,
  testEvent,
  waitForAggregate,
  waitForJournal,
} from "../support/control-plane-double.ts";
import { uniqueName } from "../support/isolation.ts";
import { TENANT, openRecoveryHarness, type RecoveryHarness } from "../support/recovery-harness.ts";

// Boundary: real runtime processes killed (SIGKILL) or paused (SIGSTOP/SIGCONT) by the OS, a real
// nats-server, and the execution journal as the only truth. The test plays recovery and admission
// by appending their events (paused-for-recovery + requeued-for-resume, admitted + dispatched).
let h: RecoveryHarness;
beforeAll(async () => {
  h = await openRecoveryHarness("rtepoch");
});
afterAll(async () => {
  await h?.close();
});

describe("crash recovery: ResumeExecution at the epoch recovery moved the run to", () => {
  it("refuses ResumeExecution whose epoch is not the one recovery moved the run to, writing nothing", async () => {
    const dag = chainDag(3, 0);
    const a = await h.runtime("http");
    const executionId = await h.dispatchFresh(a, dag, "run-epoch", "lr-epoch-1");
    await waitForJournal(h.cp, TENANT, executionId, (es) => es.some((e) => e.event.type === "exec.completed"));
    const before = await journal(h.cp, TENANT, executionId);
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
    expect((await journal(h.cp, TENANT, executionId)).length).toBe(before.length);
  });

  it("an execution whose journal ended before its run did (the host died between the two terminal events) is finished by a resume at the next epoch: run completed from the journal, no step re-run, nothing appended to the journal", async () => {
    const dag = chainDag(2, 0);
    const [sharedRunId, failedLocalRunId] = ["run-ended", "lr-ended-1"];
    const executionId = executionIdFor(SharedRunId.parse(sharedRunId), LocalRunId.parse(failedLocalRunId));
    const gone = { runtimeInstanceId: uniqueName("rt-gone"), hostIncarnation: "pid:1:1", transport: "http" as const };
    const dispatchedSeq = await admitAndDispatch(
      h.cp,
      { tenantId: TENANT, sharedRunId, localRunId: failedLocalRunId, ...gone },
      dag,
    );
    // What the dead host had written: run started, and its whole journal up to exec completed.
    await h.cp.store.append(
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
      await h.cp.store.append(execRef(TENANT, executionId), e, {
        expectedSeq: i === 0 ? 0 : await h.cp.store.lastSeq(execRef(TENANT, executionId)),
      });
    const before = await journal(h.cp, TENANT, executionId);
    // Recovery's transition for an ended journal: the run alone moves, to the journal's epoch + 1.
    await h.cp.store.append(
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
      { expectedSeq: await h.cp.store.lastSeq(runRef(TENANT, sharedRunId)) },
    );
    const b = await h.runtime("grpc");
    const resumeSeq = await admitAndDispatch(
      h.cp,
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
    const run = await waitForAggregate(h.cp, runRef(TENANT, sharedRunId), (es) =>
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
    expect(await journal(h.cp, TENANT, executionId)).toEqual(before);
  });
});
