import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { validateExecution } from "../../aggregates/replay-validation.ts";
import { DagDefinition, type DagInput } from "../../contracts/index.ts";
import { execRef, runRef, type StoredEvent } from "../../streams/index.ts";
import { apiFixture, auth, type ApiFixture } from "../support/api-app.ts";
import { openControlPlaneDouble, waitForAggregate, type ControlPlaneDouble } from "../support/control-plane-double.ts";
import { uniqueName } from "../support/isolation.ts";
import { startRuntimeProcess, type RuntimeProcess } from "../support/runtime-process.ts";
import { dispatchRun, submitRun } from "../support/wait-runs.ts";

// Boundary: a run whose step waits on two waits with trigger `any`, submitted through the real API
// (fastify, inject) onto a real nats-server and executed by a real runtime process; the signal goes
// through POST /v1/runs/:id/signals/:name and the runtime reads it back from JetStream.
let fx: ApiFixture;
let cp: ControlPlaneDouble;
let rt: RuntimeProcess;

beforeAll(async () => {
  fx = await apiFixture(inject("natsUrl"));
  cp = await openControlPlaneDouble(inject("natsUrl"), fx.layout.eventPrefix.replace(/\.drover$/, ""));
  rt = await startRuntimeProcess({
    natsUrl: inject("natsUrl"),
    streamTag: fx.layout.eventPrefix.replace(/\.drover$/, ""),
    runtimeInstanceId: uniqueName("rt"),
    transport: "http",
    tenantId: "acme",
    sizing: { workers: 1, maxWorkersPerRun: 1, maxConcurrentRuns: 2 },
  });
});
afterAll(async () => {
  await rt?.kill();
  await cp?.close();
  await fx?.close();
});

/** examples/control-flow-any-wait/dag.json: two waits, `decide` goes on the first resolved (`trigger: any`). */
const race = JSON.parse(
  readFileSync(resolve(import.meta.dirname, "../../examples/control-flow-any-wait/dag.json"), "utf8"),
) as DagInput;
const of = (es: readonly StoredEvent[], type: string) =>
  es.filter((e) => e.event.type === type).map((e) => e.event.data as Record<string, unknown>);

describe("trigger any over waits on a real runtime: the first resolved wait wins", () => {
  it("one signal resolves its wait, the other open wait is stopped and journaled superseded, the dependent goes on and the run completes; replay validates it", async () => {
    const sharedRunId = await submitRun(fx, race);
    const executionId = await dispatchRun(cp, rt, sharedRunId, race);
    const ref = execRef("acme", executionId);
    await waitForAggregate(cp, ref, (es) => of(es, "exec.wait-opened").length === 2, 30_000);

    const sent = await fx.app.inject({
      method: "POST",
      url: `/v1/runs/${sharedRunId}/signals/approve`,
      headers: auth("acme"),
      payload: { payload: { ok: true } },
    });
    expect(sent.statusCode, sent.body).toBe(202);
    const events = await waitForAggregate(cp, ref, (es) => of(es, "exec.completed").length === 1, 30_000);

    expect(of(events, "exec.wait-resolved")).toMatchObject([{ stepId: "approve", by: "signal" }]);
    expect(of(events, "exec.step-skipped")).toEqual([
      { stepId: "reject", reason: "superseded", detail: "decide went on approve (trigger any)" },
    ]);
    expect(of(events, "exec.condition-evaluated")).toEqual([{ stepId: "decide", result: true }]);
    const completed = of(events, "exec.step-completed").map((d) => d.stepId);
    expect(completed).toEqual(["approve", "decide"]);
    // The skip comes after the resolution it follows from, and before the dependent ran.
    const at = (t: string, id: string) =>
      events.findIndex((e) => e.event.type === t && (e.event.data as { stepId?: string }).stepId === id);
    expect(at("exec.step-completed", "approve")).toBeLessThan(at("exec.step-skipped", "reject"));
    expect(at("exec.step-skipped", "reject")).toBeLessThan(at("exec.step-completed", "decide"));
    const digest = (t: string) => createHash("sha256").update(t).digest("hex");
    expect(validateExecution({ executionId, journal: events, dag: DagDefinition.parse(race), digest })).toMatchObject({
      kind: "match",
    });

    await waitForAggregate(
      cp,
      runRef("acme", sharedRunId),
      (es) => es.some((e) => e.event.type === "run.completed"),
      30_000,
    );
    const view = await fx.app.inject({ url: `/v1/runs/${sharedRunId}`, headers: auth("acme") });
    expect(view.json().waits).toMatchObject([
      { stepId: "approve", state: "resolved" },
      { stepId: "reject", state: "superseded", signal: null },
    ]);
  });
});
