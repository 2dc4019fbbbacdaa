import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DagDefinition, type DroverEvent } from "../../contracts/index.ts";
import { validateExecution } from "../../aggregates/replay-validation.ts";
import { runRef } from "../../streams/index.ts";
import { apiFixture, auth, type ApiFixture } from "../support/api-app.ts";
import {
  admitAndDispatch,
  openControlPlaneDouble,
  waitForAggregate,
  waitForJournal,
  type ControlPlaneDouble,
} from "../support/control-plane-double.ts";
import { uniqueName } from "../support/isolation.ts";
import { startRuntimeProcess, type RuntimeProcess } from "../support/runtime-process.ts";
import { startedExecutionId } from "../support/started-execution.ts";

// Boundary: a run submitted through the real API (fastify, inject) onto a real nats-server, executed
// by a real runtime process; its journal is read back from JetStream, shown by the API, and replayed.
const TENANT = "acme";
let fx: ApiFixture;
let cp: ControlPlaneDouble;
let rt: RuntimeProcess;

beforeAll(async () => {
  fx = await apiFixture(inject("natsUrl"));
  const tag = fx.layout.eventPrefix.replace(/\.drover$/, "");
  cp = await openControlPlaneDouble(inject("natsUrl"), tag);
  rt = await startRuntimeProcess({
    natsUrl: inject("natsUrl"),
    streamTag: tag,
    runtimeInstanceId: uniqueName("rt"),
    transport: "http",
    tenantId: TENANT,
  });
});
afterAll(async () => {
  await rt?.kill();
  await cp?.close();
  await fx?.close();
});

const dagBody = {
  name: "conditions",
  steps: [
    { id: "classify", kind: "compute" },
    { id: "eu-only", kind: "compute", dependsOn: ["classify"], when: 'input.region == "eu"' },
    { id: "notify", kind: "compute", dependsOn: ["eu-only"] },
    { id: "report", kind: "compute", dependsOn: ["notify", "classify"], trigger: "all-done" },
  ],
};

describe("conditions through the API and a real runtime", () => {
  it("refuses a condition that reads a step it does not depend on with 400 dag-invalid naming the step", async () => {
    const bad = structuredClone(dagBody);
    bad.steps[2]!.when = 'steps.classify.output.digest != ""';
    const res = await fx.app.inject({ method: "POST", url: "/v1/runs", headers: auth("acme"), payload: { dag: bad } });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error).toMatchObject({ code: "dag-invalid" });
    expect(JSON.stringify(res.json())).toContain('step \\"notify\\" condition reads steps.classify');
  });

  it("a false when skips the step and its dependent, visible on the run (state and reason) and in replay (a match that re-derives the condition)", async () => {
    const input = { region: "us" };
    const res = await fx.app.inject({
      method: "POST",
      url: "/v1/runs",
      headers: auth("acme"),
      payload: { dag: dagBody, input },
    });
    expect(res.statusCode).toBe(201);
    const sharedRunId = res.json().sharedRunId as string;
    const dag = DagDefinition.parse(dagBody);
    const localRunId = `${sharedRunId}-l1`;
    const placement = { tenantId: TENANT, sharedRunId, localRunId };
    const dispatchedSeq = await admitAndDispatch(
      cp,
      {
        ...placement,
        transport: "http",
        runtimeInstanceId: rt.runtimeInstanceId,
        hostIncarnation: rt.hostIncarnation,
      },
      dag,
    );
    const r = await rt.send({
      operation: "DispatchRun",
      payload: { ...placement, dag, input, dispatchedSeq, correlationId: sharedRunId },
    } as never);
    expect(r, JSON.stringify(r)).toMatchObject({ success: true });
    const executionId = startedExecutionId(r.payload, placement.sharedRunId, placement.localRunId);
    const journal = await waitForJournal(cp, TENANT, executionId, (es) =>
      es.some((e) => e.event.type === "exec.completed" || e.event.type === "exec.failed"),
    );
    await waitForAggregate(cp, runRef(TENANT, sharedRunId), (es) => es.some((e) => e.event.type === "run.completed"));
    const of = (type: string) => journal.filter((e) => e.event.type === type).map((e) => e.event.data);
    expect(of("exec.condition-evaluated")).toEqual([{ stepId: "eu-only", result: false }]);
    expect(of("exec.step-skipped")).toMatchObject([
      { stepId: "eu-only", reason: "condition-false" },
      { stepId: "notify", reason: "dependency-skipped" },
    ]);
    expect(of("exec.step-completed").map((d) => (d as { stepId: string }).stepId)).toEqual(["classify", "report"]);

    const got = await fx.app.inject({ url: `/v1/runs/${sharedRunId}`, headers: auth("acme") });
    expect(got.statusCode).toBe(200);
    const steps = got.json().steps as { id: string; state: string; skip: unknown; condition: unknown }[];
    expect(got.json().status).toBe("completed");
    expect(steps.map((s) => [s.id, s.state, s.condition])).toEqual([
      ["classify", "completed", null],
      ["eu-only", "skipped", false],
      ["notify", "skipped", null],
      ["report", "completed", null],
    ]);
    expect(steps[1]!.skip).toEqual({ reason: "condition-false", detail: 'condition was false: input.region == "eu"' });
    expect(steps[2]!.skip).toEqual({
      reason: "dependency-skipped",
      detail: "dependency eu-only was skipped (trigger all-completed)",
    });

    const digest = (s: string) => createHash("sha256").update(s).digest("hex");
    const replay = { executionId, journal: journal as readonly { seq: number; event: DroverEvent }[], dag, digest };
    expect(validateExecution({ ...replay, input: { value: input } })).toMatchObject({ kind: "match" });
    const other = validateExecution({ ...replay, input: { value: { region: "eu" } } });
    expect(other).toMatchObject({ kind: "divergence", divergence: { invariant: "condition-rederivation" } });
  });
});
