import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DagInput } from "../../contracts/index.ts";
import { execRef, runRef, type StoredEvent } from "../../streams/index.ts";
import { apiFixture, auth, type ApiFixture } from "../support/api-app.ts";
import { openControlPlaneDouble, waitForAggregate, type ControlPlaneDouble } from "../support/control-plane-double.ts";
import { uniqueName } from "../support/isolation.ts";
import { startRuntimeProcess, type RuntimeProcess } from "../support/runtime-process.ts";
import { dispatchRun, submitRun } from "../support/wait-runs.ts";

// Boundary: a run with a wait step submitted through the real API (fastify, inject) onto a real
// nats-server and executed by a real runtime process, which reads its run's signals through the
// history responder (the provisioner's, played by the control-plane double); the responder is gone
// for a while, as while the provisioner is SIGKILLed and restarted.
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

const of = (es: readonly StoredEvent[], type: string) =>
  es.filter((e) => e.event.type === type).map((e) => e.event.data);

describe("a wait outlasts an outage of the history responder (a provisioner restart)", () => {
  it("reads nobody answers (the responder gone longer than the reader's ~3.7 s of retries) fail no step: the wait keeps listening, and once the responder is back the signal completes the run", async () => {
    // No `retry`: one attempt, as the e2e's wait (CI at load ~25: the 2 s re-read met the provisioner
    // restarting, its step failed `event-store-unavailable` and the run failed; no resume ever came).
    const dag = {
      name: "review",
      steps: [
        { id: "draft", kind: "compute" },
        { id: "review", kind: "wait", dependsOn: ["draft"], params: { name: "approval", timeoutMs: 120_000 } },
        { id: "publish", kind: "compute", dependsOn: ["review"] },
      ],
    } as DagInput;
    const sharedRunId = await submitRun(fx, dag);
    const executionId = await dispatchRun(cp, rt, sharedRunId, dag);
    await waitForAggregate(cp, execRef(TENANT, executionId), (es) => of(es, "exec.wait-opened").length > 0, 30_000);

    // The provisioner goes: the wait's reads of its run (the one 2 s after it started listening
    // included) find no responder. The runtime says so, and nothing is journaled for it.
    await cp.history.stop();
    const unanswered = rt
      .waitForLine((l) => l.event === "wait-read-unanswered" && l.executionId === executionId, 30_000)
      .then(() => "the runtime said its read was unanswered");
    const failed = waitForAggregate(
      cp,
      execRef(TENANT, executionId),
      (es) => of(es, "exec.failed").length > 0,
      30_000,
    ).then((es) => `the execution failed: ${JSON.stringify(of(es, "exec.failed"))}`);
    for (const p of [unanswered, failed]) p.catch(() => undefined);
    expect(await Promise.race([unanswered, failed])).toBe("the runtime said its read was unanswered");
    const during = (await cp.store.read(execRef(TENANT, executionId))).events;
    expect(of(during, "exec.step-failed")).toEqual([]);
    expect(of(during, "exec.failed")).toEqual([]);

    // The provisioner is back: the approver's signal resolves the wait and the run completes.
    cp.history.start();
    const sent = await fx.app.inject({
      method: "POST",
      url: `/v1/runs/${sharedRunId}/signals/approval`,
      headers: auth("acme"),
      payload: { payload: { approved: true } },
    });
    expect(sent.statusCode, sent.body).toBe(202);
    const es = await waitForAggregate(
      cp,
      execRef(TENANT, executionId),
      (h) => h.some((e) => e.event.type === "exec.completed" || e.event.type === "exec.failed"),
      30_000,
    );
    expect(of(es, "exec.step-failed")).toEqual([]);
    expect(of(es, "exec.wait-resolved")).toMatchObject([{ stepId: "review", by: "signal" }]);
    expect(of(es, "exec.step-completed").map((d) => (d as { stepId: string }).stepId)).toEqual([
      "draft",
      "review",
      "publish",
    ]);
    expect(of(es, "exec.completed")).toHaveLength(1);
    const ended = (h: readonly StoredEvent[]) =>
      h.some((e) => e.event.type === "run.completed" || e.event.type === "run.failed");
    const run = await waitForAggregate(cp, runRef(TENANT, sharedRunId), ended, 30_000);
    expect(run.map((e) => e.event.type)).toContain("run.completed");
  });
});
