import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ExecutionId, RuntimeInstanceId, SharedRunId, StepId, TenantId, WorkerVersion } from "../../contracts/index.ts";
import { execRef, runRef, runtimeRef } from "../../streams/subjects.ts";
import { apiFixture, auth, type ApiFixture } from "../support/api-app.ts";
import { event } from "../support/streams.ts";

const acme = TenantId.parse("acme");
const V1 = WorkerVersion.parse("1".repeat(64));
const V2 = WorkerVersion.parse("2".repeat(64));
const V3 = WorkerVersion.parse("3".repeat(64));
const DAG = {
  name: "up",
  steps: [
    { id: "a", kind: "custom", handler: "legacy", params: {} },
    { id: "b", kind: "custom", handler: "work", params: {}, dependsOn: ["a"] },
  ],
};

/**
 * `POST /v1/runs/:id/upgrade` (docs/worker-versions.md "Upgrade") against a real nats-server: the
 * API reads the run, its journal and the runtimes' registrations from JetStream and appends
 * `run.upgraded` conditionally. The registrations and the run's placement are appended by the test
 * as the provisioner, admission and runtime would (test/e2e/worker-upgrade.e2e.test.ts runs them all).
 */
describe("run upgrade through the API against a real nats-server", () => {
  let fx: ApiFixture;
  beforeAll(async () => {
    const worker = { module: "/nonexistent/worker.ts", kinds: ["legacy", "work"] };
    fx = await apiFixture(inject("natsUrl"), {
      tenants: [
        { tenantId: TenantId.parse("acme"), isolationMode: "dedicated", worker },
        { tenantId: TenantId.parse("globex"), isolationMode: "dedicated", worker },
      ],
    });
    const register = async (id: string, tenantId: string, version: string, deployedAt: string, kinds: string[]) => {
      const base = event("runtime.registered");
      const data = {
        ...base.data,
        tenantId: TenantId.parse(tenantId),
        worker: { version: WorkerVersion.parse(version), deployedAt, pinned: false },
        stepKinds: ["compute", ...kinds.map((k) => `custom:${k}`)],
      };
      await fx.store.append(runtimeRef(RuntimeInstanceId.parse(id)), { ...base, data }, { expectedSeq: 0 });
    };
    await register("rt-up-v1", "acme", V1, "2026-01-01T00:00:00.000Z", ["legacy", "work"]);
    await register("rt-up-v2", "acme", V2, "2026-01-02T00:00:00.000Z", ["work"]);
    await register("rt-gx-v3", "globex", V3, "2026-01-03T00:00:00.000Z", ["legacy", "work"]);
  });
  afterAll(async () => {
    await fx?.close();
  });

  const upgrade = (id: string, body: object = {}, who: "acme" | "globex" | "operator" = "acme", q = "") =>
    fx.app.inject({ method: "POST", url: `/v1/runs/${id}/upgrade${q}`, headers: auth(who), payload: body });
  const upgradedEvents = async (id: string) =>
    (await fx.store.read(runRef(acme, SharedRunId.parse(id)))).events.filter((e) => e.event.type === "run.upgraded");

  /** A submitted run placed on, and started by, the v1 runtime (pinned to v1). */
  const startedOnV1 = async () => {
    const run = (
      await fx.app.inject({ method: "POST", url: "/v1/runs", headers: auth("acme"), payload: { dag: DAG } })
    ).json();
    const ref = runRef(acme, run.sharedRunId);
    const early = await upgrade(run.sharedRunId);
    expect([early.statusCode, early.json().error.code]).toEqual([409, "run-not-pinned"]);
    const placedOn = RuntimeInstanceId.parse("rt-up-v1");
    const admitted = event("run.admitted", { tenantId: acme });
    const a = await fx.store.append(
      ref,
      { ...admitted, data: { ...admitted.data, runtimeInstanceId: placedOn, workerVersion: V1 } },
      { expectedSeq: run.lastSeq },
    );
    const executionId = ExecutionId.parse(`ex-${run.sharedRunId.slice(4, 20)}`);
    const started = event("run.started", { tenantId: acme });
    const s = await fx.store.append(
      ref,
      {
        ...started,
        writer: { service: "runtime", instanceId: "rt-proc-up", runtimeInstanceId: placedOn },
        data: { ...started.data, executionId, runtimeInstanceId: placedOn },
      },
      { expectedSeq: a.seq },
    );
    const e = await fx.store.append(
      execRef(acme, executionId),
      event("exec.started", {
        tenantId: acme,
        data: { ...event("exec.started").data, sharedRunId: SharedRunId.parse(run.sharedRunId) },
      }),
      { expectedSeq: 0 },
    );
    return { id: run.sharedRunId as string, executionId, runSeq: s.seq, execSeq: e.seq };
  };

  it("refuses a version lacking a kind the remaining steps need, naming the missing kinds, and appends nothing", async () => {
    const run = await startedOnV1();
    const before = await fx.messageCount();
    const refused = await upgrade(run.id);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toMatchObject({
      code: "upgrade-missing-kinds",
      details: { missingKinds: ["custom:legacy"], fromVersion: V1, toVersion: V2 },
    });
    expect(refused.json().error.message).toContain("custom:legacy");
    // Another tenant's version is unknown to acme; another tenant cannot see the run at all.
    const foreign = await upgrade(run.id, { version: V3 });
    expect([foreign.statusCode, foreign.json().error.code]).toEqual([422, "worker-version-unknown"]);
    const cross = await upgrade(run.id, { version: V3 }, "globex");
    expect([cross.statusCode, cross.json().error.code]).toEqual([404, "not-found"]);
    expect(await fx.messageCount()).toBe(before);
    expect((await fx.app.inject({ url: `/v1/runs/${run.id}`, headers: auth("acme") })).json().workerVersion).toBe(V1);
  });

  it("accepts once the step needing the missing kind completed: one run.upgraded by the caller, pinned to v2 after; concurrent requests append it once", async () => {
    const run = await startedOnV1();
    const done = event("exec.step-completed", { tenantId: acme });
    await fx.store.append(
      execRef(acme, run.executionId),
      { ...done, data: { ...done.data, stepId: StepId.parse("a") } },
      { expectedSeq: run.execSeq },
    );
    // Five at once: one appends, the others lose the conditional append, read again and find it done.
    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => upgrade(run.id)));
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 200]);
    const outcomes = answers.map((a) => a.json().outcome).sort();
    expect(outcomes).toEqual([
      "already-on-version",
      "already-on-version",
      "already-on-version",
      "already-on-version",
      "upgraded",
    ]);
    const accepted = answers.map((a) => a.json()).find((b) => b.outcome === "upgraded");
    expect(accepted).toMatchObject({ fromVersion: V1, toVersion: V2, kinds: ["custom:work"] });
    expect(accepted.run).toMatchObject({ status: "started", workerVersion: V2 });
    const upgraded = await upgradedEvents(run.id);
    expect(upgraded.map((e) => e.event)).toMatchObject([
      {
        type: "run.upgraded",
        writer: { service: "api" },
        data: { fromVersion: V1, toVersion: V2, kinds: ["custom:work"], by: "tenant:acme" },
      },
    ]);
    expect(upgraded[0]!.seq).toBeGreaterThan(run.runSeq);
    // Back to v1 is no upgrade.
    const back = await upgrade(run.id, { version: V1 }, "operator", "?tenant=acme");
    expect([back.statusCode, back.json().error.code]).toEqual([409, "worker-version-not-newer"]);
  });

  it("refuses an ended run (run-terminal)", async () => {
    const run = await startedOnV1();
    const completed = event("run.completed", { tenantId: acme });
    await fx.store.append(
      runRef(acme, SharedRunId.parse(run.id)),
      {
        ...completed,
        writer: {
          service: "runtime",
          instanceId: "rt-proc-up",
          runtimeInstanceId: RuntimeInstanceId.parse("rt-up-v1"),
        },
        data: { ...completed.data, executionId: run.executionId },
      },
      { expectedSeq: run.runSeq },
    );
    const r = await upgrade(run.id, { version: V2 });
    expect([r.statusCode, r.json().error.code]).toEqual([409, "run-terminal"]);
  });
});
