/**
 * A control-plane double, real runtime processes and the steps recovery and admission take for an
 * in-flight execution (paused-for-recovery + requeued-for-resume, admitted + dispatched, then
 * ResumeExecution), shared by the host tier's crash-recovery tests.
 */
import { expect, inject } from "vitest";
import type { DagDefinition, Transport } from "../../contracts/index.ts";
import type { StoredEvent } from "../../streams/index.ts";
import {
  admitAndDispatch,
  openControlPlaneDouble,
  pauseForRecovery,
  type ControlPlaneDouble,
} from "./control-plane-double.ts";
import { uniqueName } from "./isolation.ts";
import { startRuntimeProcess, type RuntimeProcess } from "./runtime-process.ts";
import { startedExecutionId } from "./started-execution.ts";

export const TENANT = "t-rec";

export type RecoveryHarness = Awaited<ReturnType<typeof openRecoveryHarness>>;

/** Opens a control-plane double on its own streams; `close()` kills every runtime it started. */
export async function openRecoveryHarness(prefix: string) {
  const tag = uniqueName(prefix);
  const cp: ControlPlaneDouble = await openControlPlaneDouble(inject("natsUrl"), tag);
  const started: RuntimeProcess[] = [];
  const completedIds = (events: readonly StoredEvent[]) =>
    events
      .filter((e) => e.event.type === "exec.step-completed")
      .map((e) => (e.event.data as { stepId: string }).stepId);

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
    return startedExecutionId(r.payload, sharedRunId, localRunId);
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

  async function close() {
    await Promise.all(started.map((p) => p.kill()));
    await cp.close();
  }
  return { cp, runtime, dispatchFresh, recoverOnto, expectExactlyOnePerStep, completedIds, close };
}
