import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DagDefinition, type DagInput } from "../../contracts/index.ts";
import { runRef } from "../../streams/index.ts";
import { chainDag, journal, waitForAggregate, waitForJournal } from "../support/control-plane-double.ts";
import { TENANT, openRecoveryHarness, type RecoveryHarness } from "../support/recovery-harness.ts";

// Boundary: real runtime processes killed (SIGKILL) or paused (SIGSTOP/SIGCONT) by the OS, a real
// nats-server, and the execution journal as the only truth. The test plays recovery and admission
// by appending their events (paused-for-recovery + requeued-for-resume, admitted + dispatched).
let h: RecoveryHarness;
beforeAll(async () => {
  h = await openRecoveryHarness("rtrec");
});
afterAll(async () => {
  await h?.close();
});

describe("crash recovery: a replacement runtime continues the same execution", () => {
  it("after SIGKILL with ≥ 25 durable steps, a new runtime resumes the same ExecutionId from the first incomplete step; one step-completed per step", async () => {
    const dag = chainDag(50, 40);
    const a = await h.runtime("http");
    const executionId = await h.dispatchFresh(a, dag, "run-kill", "lr-kill-1");
    await waitForJournal(h.cp, TENANT, executionId, (es) => h.completedIds(es).length >= 25);
    await a.kill();
    const beforeResume = h.completedIds(await journal(h.cp, TENANT, executionId));
    expect(beforeResume.length).toBeGreaterThanOrEqual(25);
    const firstIncomplete = dag.steps.find((s) => !beforeResume.includes(s.id))?.id;

    const b = await h.runtime("grpc");
    const sentAt = await h.recoverOnto(b, {
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
    const events = await waitForJournal(h.cp, TENANT, executionId, (es) =>
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
    expect(h.completedIds(events.slice(resumedAt))[0]).toBe(firstIncomplete);
    h.expectExactlyOnePerStep(events, dag);
    // Every write after the recovery fence is the replacement's, at the new epoch.
    expect(
      events
        .slice(resumedAt)
        .every((e) => e.event.writer.runtimeInstanceId === b.runtimeInstanceId && e.event.writer.epoch === 1),
    ).toBe(true);
    const run = (
      await waitForAggregate(h.cp, runRef(TENANT, "run-kill"), (es) => es.some((e) => e.event.type === "run.completed"))
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
    const a = await h.runtime("grpc");
    const executionId = await h.dispatchFresh(a, dag, "run-stop", "lr-stop-1");
    await waitForJournal(h.cp, TENANT, executionId, (es) => h.completedIds(es).length >= 10);
    a.pause();
    const b = await h.runtime("http");
    await h.recoverOnto(b, {
      dag,
      sharedRunId: "run-stop",
      executionId,
      failed: a,
      failedLocalRunId: "lr-stop-1",
      localRunId: "lr-stop-2",
      epoch: 1,
    });
    await waitForJournal(h.cp, TENANT, executionId, (es) => es.some((e) => e.event.type === "exec.completed"));

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

    const events = await journal(h.cp, TENANT, executionId);
    h.expectExactlyOnePerStep(events, dag);
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
    const a = await h.runtime("http");
    const executionId = await h.dispatchFresh(a, dag, "run-nap", "lr-nap-1");
    const timer = (
      await waitForJournal(h.cp, TENANT, executionId, (es) => es.some((e) => e.event.type === "exec.timer-started"))
    ).find((e) => e.event.type === "exec.timer-started")!;
    const wakeAt = Date.parse((timer.event.data as { wakeAt: string }).wakeAt);
    expect(wakeAt - timer.time.getTime()).toBeGreaterThan(SLEEP_MS - 1_000);
    await new Promise((r) => setTimeout(r, 4_000));
    await a.kill();
    const b = await h.runtime("grpc");
    await h.recoverOnto(b, {
      dag,
      sharedRunId: "run-nap",
      executionId,
      failed: a,
      failedLocalRunId: "lr-nap-1",
      localRunId: "lr-nap-2",
      epoch: 1,
    });
    const events = await waitForJournal(h.cp, TENANT, executionId, (es) =>
      es.some((e) => e.event.type === "exec.completed"),
    );
    const napDone = events.find(
      (e) => e.event.type === "exec.step-completed" && (e.event.data as { stepId: string }).stepId === "nap",
    )!;
    // Woke at the journalled time (runtime and server share this machine's clock), or at once when
    // the replacement resumed only after it (a loaded machine): sleeping it all again would end
    // 10 s after the resume, >= 4 s after the wake-up.
    const resumed = events.find((e) => e.event.type === "exec.resumed")!;
    expect(napDone.time.getTime()).toBeGreaterThanOrEqual(wakeAt - 50);
    expect(napDone.time.getTime()).toBeLessThan(Math.max(wakeAt, resumed.time.getTime()) + 2_000);
    expect(events.filter((e) => e.event.type === "exec.timer-started")).toHaveLength(1);
    expect(napDone.event.writer.runtimeInstanceId).toBe(b.runtimeInstanceId);
    h.expectExactlyOnePerStep(events, dag);
  });
});
