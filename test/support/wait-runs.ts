import { expect } from "vitest";
import { DagDefinition, type DagInput } from "../../contracts/index.ts";
import { auth, type ApiFixture } from "./api-app.ts";
import { admitAndDispatch, type ControlPlaneDouble } from "./control-plane-double.ts";
import type { RuntimeProcess } from "./runtime-process.ts";
import { startedExecutionId } from "./started-execution.ts";

/** Submits `dag` for tenant acme through the real API (fastify inject); its SharedRunId. */
export async function submitRun(fx: ApiFixture, dag: DagInput): Promise<string> {
  const res = await fx.app.inject({ method: "POST", url: "/v1/runs", headers: auth("acme"), payload: { dag } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().sharedRunId as string;
}

/**
 * Admits and dispatches the run (control-plane double's conditional appends) to the real runtime
 * process `to` as its `n`th placement, and sends it DispatchRun; the ExecutionId it started.
 */
export async function dispatchRun(
  cp: ControlPlaneDouble,
  to: RuntimeProcess,
  sharedRunId: string,
  dagInput: DagInput,
  n = 1,
): Promise<string> {
  const dag = DagDefinition.parse(dagInput);
  const localRunId = `${sharedRunId}-l${n}`;
  const placement = { tenantId: "acme", sharedRunId, localRunId };
  const dispatchedSeq = await admitAndDispatch(
    cp,
    { ...placement, transport: "http", runtimeInstanceId: to.runtimeInstanceId, hostIncarnation: to.hostIncarnation },
    dag,
  );
  const r = await to.send({
    operation: "DispatchRun",
    payload: { ...placement, dag, dispatchedSeq, correlationId: sharedRunId },
  } as never);
  expect(r, JSON.stringify(r)).toMatchObject({ success: true });
  return startedExecutionId(r.payload, placement.sharedRunId, placement.localRunId);
}
