import { createHash } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { validateExecution } from "../../aggregates/replay-validation.ts";
import { runsMain } from "../../cli/runs/program.ts";
import { DagDefinition, type DagInput } from "../../contracts/index.ts";
import { execRef, runRef, type AggregateRef, type StoredEvent } from "../../streams/index.ts";
import { apiFixture, auth, TOKENS, type ApiFixture } from "../support/api-app.ts";
import {
  admitAndDispatch,
  journal,
  openControlPlaneDouble,
  pauseForRecovery,
  waitForAggregate,
  type ControlPlaneDouble,
} from "../support/control-plane-double.ts";
import { uniqueName } from "../support/isolation.ts";
import { startRuntimeProcess, type RuntimeProcess } from "../support/runtime-process.ts";
import { dispatchRun, submitRun } from "../support/wait-runs.ts";
import { startedExecutionId } from "../support/started-execution.ts";

// Boundary: runs with wait steps submitted through the real API (fastify, inject) onto a real
// nats-server, executed by real runtime processes (one killed with SIGKILL); signals go through
// POST /v1/runs/:id/signals/:name (and `drover runs signal` over real HTTP) and are read back from
// JetStream by the runtime.
const TENANT = "acme";
let fx: ApiFixture;
let cp: ControlPlaneDouble;
let tag: string;
const runtimes: RuntimeProcess[] = [];
let rt: RuntimeProcess;

async function runtime(): Promise<RuntimeProcess> {
  const r = await startRuntimeProcess({
    natsUrl: inject("natsUrl"),
    streamTag: tag,
    runtimeInstanceId: uniqueName("rt"),
    transport: "http",
    tenantId: TENANT,
    // One worker: a waiting run must leave it to the others.
    sizing: { workers: 1, maxWorkersPerRun: 1, maxConcurrentRuns: 4 },
  });
  runtimes.push(r);
  return r;
}

beforeAll(async () => {
  fx = await apiFixture(inject("natsUrl"));
  tag = fx.layout.eventPrefix.replace(/\.drover$/, "");
  cp = await openControlPlaneDouble(inject("natsUrl"), tag);
  rt = await runtime();
});
afterAll(async () => {
  await Promise.all(runtimes.map((r) => r.kill()));
  await cp?.close();
  await fx?.close();
});

const approvalSchema = {
  type: "object",
  properties: { approved: { type: "boolean" }, note: { type: "string" } },
  required: ["approved"],
  additionalProperties: false,
};
const waitDag = (params: Record<string, unknown>, publishMs = 0): DagInput =>
  ({
    name: "review",
    steps: [
      { id: "draft", kind: "compute" },
      { id: "review", kind: "wait", dependsOn: ["draft"], params: { name: "approval", ...params } },
      { id: "publish", kind: "compute", dependsOn: ["review"], params: { durationMs: publishMs } },
    ],
  }) as DagInput;

const submit = (dag: DagInput) => submitRun(fx, dag);
const dispatch = (to: RuntimeProcess, sharedRunId: string, dag: DagInput, n = 1) =>
  dispatchRun(cp, to, sharedRunId, dag, n);

/** The aggregate once `pred` holds (control-plane-double's waitForAggregate, 30 s deadline). */
const until = (ref: AggregateRef, pred: (es: readonly StoredEvent[]) => boolean) =>
  waitForAggregate(cp, ref, pred, 30_000);
const signal = (sharedRunId: string, who: Parameters<typeof auth>[0], payload: unknown, signalId?: string) =>
  fx.app.inject({
    method: "POST",
    url: `/v1/runs/${sharedRunId}/signals/approval`,
    headers: auth(who),
    payload: { payload, ...(signalId ? { signalId } : {}) },
  });
const of = (es: readonly StoredEvent[], type: string) =>
  es.filter((e) => e.event.type === type).map((e) => e.event.data);
const ended = (es: readonly StoredEvent[]) =>
  es.some((e) => e.event.type === "exec.completed" || e.event.type === "exec.failed");
const opened = (es: readonly StoredEvent[]) => es.some((e) => e.event.type === "exec.wait-opened");

describe("wait steps through the API and a real runtime", () => {
  it("only an allowed principal resolves an open wait: operator and non-resolver 403, another tenant 404, bad payload 400, none writes an event; the resolver's signal lets the run go on, and the worker stays free meanwhile", async () => {
    const dag = waitDag({ timeoutMs: 60_000, schema: approvalSchema, resolvers: ["role:approver"] });
    const sharedRunId = await submit(dag);
    const executionId = await dispatch(rt, sharedRunId, dag);
    await until(execRef(TENANT, executionId), opened);

    // While the run waits, another run on the same one-worker runtime runs to its end.
    const other: DagInput = { steps: [{ id: "work", kind: "compute", params: { durationMs: 200 } }] };
    const otherId = await submit(other);
    const t0 = performance.now();
    const otherExec = await dispatch(rt, otherId, other);
    await until(execRef(TENANT, otherExec), (es) => es.some((e) => e.event.type === "exec.completed"));
    const otherMs = performance.now() - t0;

    const before = await cp.store.lastSeq(runRef(TENANT, sharedRunId));
    const bob = await signal(sharedRunId, "acmeBob", { approved: true });
    expect(bob.statusCode, bob.body).toBe(403);
    expect(bob.json().error.code).toBe("forbidden");
    const acme = await signal(sharedRunId, "acme", { approved: true });
    expect(acme.statusCode).toBe(403);
    const ops = await signal(sharedRunId, "operator", { approved: true });
    expect(ops.statusCode).toBe(403);
    const globex = await signal(sharedRunId, "globex", { approved: true });
    expect(globex.statusCode).toBe(404);
    expect(globex.json().error.code).toBe("not-found");
    const bad = await signal(sharedRunId, "acmeAlice", { approved: "yes" });
    expect(bad.statusCode, bad.body).toBe(400);
    expect(bad.json().error.message).toContain("approved");
    const huge = await signal(sharedRunId, "acmeAlice", { approved: true, note: "x".repeat(33 * 1024) });
    expect(huge.statusCode).toBe(400);
    expect(huge.json().error.message).toContain("more than 32768");
    const unknown = await fx.app.inject({
      method: "POST",
      url: `/v1/runs/${sharedRunId}/signals/other`,
      headers: auth("acmeAlice"),
      payload: { payload: {} },
    });
    expect(unknown.statusCode).toBe(404);
    expect(await cp.store.lastSeq(runRef(TENANT, sharedRunId))).toBe(before);

    const open = await fx.app.inject({ url: `/v1/runs/${sharedRunId}`, headers: auth("acme") });
    expect(open.json().waits).toMatchObject([
      { stepId: "review", name: "approval", state: "open", resolvers: ["role:approver"], signal: null },
    ]);
    // The dashboard offers the buttons by /v1/me's name and roles.
    const me = await fx.app.inject({ url: "/v1/me", headers: auth("acmeAlice") });
    expect(me.json()).toEqual({ role: "tenant", tenantId: "acme", name: "alice", roles: ["approver"] });
    const ok = await signal(sharedRunId, "acmeAlice", { approved: true, note: "ship it" });
    expect(ok.statusCode, ok.body).toBe(202);
    expect(ok.json()).toMatchObject({
      outcome: "accepted",
      signal: { by: "tenant:acme:token:alice", stepId: "review" },
    });

    const events = await until(execRef(TENANT, executionId), ended);
    expect(of(events, "exec.wait-resolved")).toEqual([
      {
        stepId: "review",
        name: "approval",
        by: "signal",
        principal: "tenant:acme:token:alice",
        payloadDigest: ok.json().signal.payloadDigest,
        signalSeq: ok.json().signal.seq,
      },
    ]);
    const review = of(events, "exec.step-completed").find((d) => (d as { stepId: string }).stepId === "review");
    expect(review).toMatchObject({ output: { approved: true, note: "ship it" } });
    expect(of(events, "exec.completed")).toHaveLength(1);
    const digest = (t: string) => createHash("sha256").update(t).digest("hex");
    expect(validateExecution({ executionId, journal: events, dag: DagDefinition.parse(dag), digest })).toMatchObject({
      kind: "match",
    });
    await until(runRef(TENANT, sharedRunId), (es) => es.some((e) => e.event.type === "run.completed"));
    const done = await fx.app.inject({ url: `/v1/runs/${sharedRunId}`, headers: auth("acme") });
    expect(done.json().waits[0]).toMatchObject({ state: "resolved", signal: { by: "tenant:acme:token:alice" } });
    console.log(
      `[measure] a 200 ms run on a one-worker runtime while another run waits: done in ${otherMs.toFixed(0)} ms`,
    );
    expect(otherMs).toBeLessThan(10_000);
  });

  it("a signal sent before the run started is kept and consumed when the wait opens; a repeat with its signal id is answered again, another is 409", async () => {
    const dag = waitDag({ timeoutMs: 60_000 });
    const sharedRunId = await submit(dag);
    // The early signal goes through the CLI over real HTTP: drover runs signal ID NAME --data @file.
    const url = await fx.app.listen({ port: 0, host: "127.0.0.1" });
    const dir = await mkdtemp(join(tmpdir(), "drover-signal-"));
    await writeFile(join(dir, "payload.json"), JSON.stringify({ approved: true }));
    let out = "";
    const code = await runsMain(
      [
        "signal",
        sharedRunId,
        "approval",
        "--data",
        `@${join(dir, "payload.json")}`,
        "--signal-id",
        "sig-1",
        "-o",
        "json",
      ],
      { out: (t) => (out += t), err: (t) => (out += t), env: { DROVER_API_URL: url, DROVER_TOKEN: TOKENS.acme } },
    );
    await rm(dir, { recursive: true, force: true });
    expect(code, out).toBe(0);
    const early = { json: () => JSON.parse(out) as { outcome: string; signal: { seq: number } } };
    expect(early.json().outcome).toBe("accepted");
    const again = await signal(sharedRunId, "acme", { approved: true }, "sig-1");
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ outcome: "duplicate", signal: { seq: early.json().signal.seq } });
    const second = await signal(sharedRunId, "acme", { approved: false }, "sig-2");
    expect(second.statusCode).toBe(409);
    expect(second.json().error.code).toBe("wait-already-signalled");
    const pending = await fx.app.inject({ url: `/v1/runs/${sharedRunId}`, headers: auth("acme") });
    expect(pending.json().waits[0]).toMatchObject({
      state: "pending",
      signal: { by: "tenant:acme", signalId: "sig-1" },
    });

    const executionId = await dispatch(rt, sharedRunId, dag);
    const events = await until(execRef(TENANT, executionId), ended);
    expect(of(events, "exec.wait-resolved")).toMatchObject([
      { by: "signal", signalId: "sig-1", principal: "tenant:acme" },
    ]);
    expect(of(events, "exec.completed")).toHaveLength(1);
    const signals = of((await cp.store.read(runRef(TENANT, sharedRunId))).events, "run.signal-received");
    expect(signals).toHaveLength(1);
    // drover runs get lists the run's waits under its steps.
    await until(runRef(TENANT, sharedRunId), (es) => es.some((e) => e.event.type === "run.completed"));
    let got = "";
    const env = { DROVER_API_URL: url, DROVER_TOKEN: TOKENS.acme };
    expect(await runsMain(["get", sharedRunId], { out: (t) => (got += t), err: (t) => (got += t), env })).toBe(0);
    expect(got).toMatch(/WAIT\s+STEP\s+STATE/);
    expect(got).toMatch(/approval\s+review\s+resolved\s+\S+\s+any tenant token\s+tenant:acme/);
  });

  it("a signal appended after the run was dispatched and before the runtime started it does not stop the start: run.started steps over it", async () => {
    const dag = waitDag({ timeoutMs: 60_000 });
    const sharedRunId = await submit(dag);
    const parsed = DagDefinition.parse(dag);
    const placement = { tenantId: TENANT, sharedRunId, localRunId: `${sharedRunId}-l1` };
    const dispatchedSeq = await admitAndDispatch(
      cp,
      { ...placement, transport: "http", runtimeInstanceId: rt.runtimeInstanceId, hostIncarnation: rt.hostIncarnation },
      parsed,
    );
    const early = await signal(sharedRunId, "acme", { approved: true });
    expect(early.statusCode, early.body).toBe(202);
    expect(early.json().signal.seq).toBeGreaterThan(dispatchedSeq);
    const r = await rt.send({
      operation: "DispatchRun",
      payload: { ...placement, dag: parsed, dispatchedSeq, correlationId: sharedRunId },
    } as never);
    expect(r, JSON.stringify(r)).toMatchObject({ success: true });
    const executionId = startedExecutionId(r.payload, placement.sharedRunId, placement.localRunId);
    const events = await until(execRef(TENANT, executionId), ended);
    expect(of(events, "exec.completed")).toHaveLength(1);
    const run = await until(runRef(TENANT, sharedRunId), (es) => es.some((e) => e.event.type === "run.completed"));
    expect(run.map((e) => e.event.type).slice(-4)).toEqual([
      "run.dispatched",
      "run.signal-received",
      "run.started",
      "run.completed",
    ]);
  });

  it("a timeout ends as declared: onTimeout fail fails the run with wait-timeout; continue completes the step with its defaultOutput", async () => {
    const failing = waitDag({ timeoutMs: 300 });
    const failId = await submit(failing);
    const failExec = await dispatch(rt, failId, failing);
    const continuing = waitDag({ timeoutMs: 300, onTimeout: "continue", defaultOutput: { approved: false } }, 1500);
    const contId = await submit(continuing);
    const contExec = await dispatch(rt, contId, continuing);

    // A signal after the timeout was decided is kept on the run and resolves nothing.
    await until(execRef(TENANT, contExec), (es) => es.some((e) => e.event.type === "exec.wait-resolved"));
    const late = await signal(contId, "acme", { approved: true });
    expect(late.statusCode, late.body).toBe(202);
    const c = await until(execRef(TENANT, contExec), ended);
    expect(of(c, "exec.wait-resolved")).toEqual([{ stepId: "review", name: "approval", by: "timeout" }]);
    const review = of(c, "exec.step-completed").find((d) => (d as { stepId: string }).stepId === "review");
    expect(review).toMatchObject({ output: { approved: false } });
    expect(of(c, "exec.completed")).toHaveLength(1);
    await until(runRef(TENANT, contId), (es) => es.some((e) => e.event.type === "run.completed"));
    const after = await signal(contId, "acme", { approved: true }, "other");
    expect(after.statusCode).toBe(409);
    const view = await fx.app.inject({ url: `/v1/runs/${contId}`, headers: auth("acme") });
    expect(view.json().waits[0]).toMatchObject({ state: "timed-out", signal: { by: "tenant:acme" } });

    const f = await until(execRef(TENANT, failExec), ended);
    expect(of(f, "exec.wait-resolved")).toEqual([{ stepId: "review", name: "approval", by: "timeout" }]);
    expect(of(f, "exec.step-failed")).toMatchObject([{ stepId: "review", code: "wait-timeout" }]);
    expect(of(f, "exec.failed")).toMatchObject([{ reason: { code: "wait-timeout" }, stepId: "review" }]);
    const fr = await until(runRef(TENANT, failId), (es) => es.some((e) => e.event.type === "run.failed"));
    expect(of(fr, "run.failed")).toMatchObject([{ reason: { code: "wait-timeout" } }]);
  });

  it("a wait survives a SIGKILL of its runtime while parked (its run slot given back): the replacement resumes the same ExecutionId, keeps the journaled deadline, and the signal completes it", async () => {
    const dag = waitDag({ timeoutMs: 120_000 });
    const sharedRunId = await submit(dag);
    const a = await runtime();
    const executionId = await dispatch(a, sharedRunId, dag);
    const before = await until(execRef(TENANT, executionId), opened);
    // Parked when killed: the waiting execution had given its run slot back.
    await a.waitForLine((l) => l.event === "execution-parked" && l.executionId === executionId);
    const parked = await a.send({ operation: "GetQueueStatus", payload: {} } as never);
    expect(parked.payload.queue).toMatchObject({ runningRuns: 0, parkedRuns: 1, availableSlots: 6 });
    await a.kill();
    await pauseForRecovery(cp, {
      tenantId: TENANT,
      sharedRunId,
      executionId,
      failedRuntimeInstanceId: a.runtimeInstanceId,
      failedLocalRunId: `${sharedRunId}-l1`,
      newEpoch: 1,
    });
    const b = await runtime();
    const localRunId = `${sharedRunId}-l2`;
    const dispatchedSeq = await admitAndDispatch(
      cp,
      {
        tenantId: TENANT,
        sharedRunId,
        localRunId,
        runtimeInstanceId: b.runtimeInstanceId,
        hostIncarnation: b.hostIncarnation,
        transport: "http",
        resumeExecutionId: executionId,
      },
      DagDefinition.parse(dag),
    );
    const r = await b.send({
      operation: "ResumeExecution",
      payload: {
        sharedRunId,
        localRunId,
        tenantId: TENANT,
        dag: DagDefinition.parse(dag),
        dispatchedSeq,
        correlationId: sharedRunId,
        executionId,
        epoch: 1,
      },
    } as never);
    expect(r.success, JSON.stringify(r)).toBe(true);
    await until(execRef(TENANT, executionId), (es) => es.some((e) => e.event.type === "exec.resumed"));

    // A 20 KiB payload: above the 8 KiB inline limit, the step's output goes to the object store.
    const ok = await signal(sharedRunId, "acme", { approved: true, blob: "x".repeat(20 * 1024) });
    expect(ok.statusCode, ok.body).toBe(202);
    const events = await until(execRef(TENANT, executionId), ended);
    expect(of(events, "exec.wait-opened")).toEqual(of(before, "exec.wait-opened"));
    expect(of(events, "exec.wait-resolved")).toMatchObject([{ by: "signal", principal: "tenant:acme" }]);
    const resolved = events.find((e) => e.event.type === "exec.wait-resolved")!;
    expect(resolved.event.writer).toMatchObject({ runtimeInstanceId: b.runtimeInstanceId, epoch: 1 });
    expect(of(events, "exec.completed")).toHaveLength(1);
    expect(of(await journal(cp, TENANT, executionId), "exec.step-completed")).toHaveLength(3);
    const review = of(events, "exec.step-completed").find((d) => (d as { stepId: string }).stepId === "review");
    expect(review).toMatchObject({ outputRef: { digest: ok.json().signal.payloadDigest } });
    expect(review).not.toHaveProperty("output");
  });

  it("examples/control-flow-wait/dag.json: a reject signal becomes the review step's output and its false condition skips publish", async () => {
    const path = resolve(import.meta.dirname, "../../examples/control-flow-wait/dag.json");
    const dag = JSON.parse(readFileSync(path, "utf8")) as DagInput;
    const sharedRunId = await submit(dag);
    const executionId = await dispatch(rt, sharedRunId, dag);
    await until(execRef(TENANT, executionId), opened);
    const no = await signal(sharedRunId, "acmeBob", { approved: false, note: "not yet" });
    expect(no.statusCode, no.body).toBe(202);
    const events = await until(execRef(TENANT, executionId), ended);
    const review = of(events, "exec.step-completed").find((d) => (d as { stepId: string }).stepId === "review");
    expect(review).toMatchObject({ output: { approved: false, note: "not yet" } });
    expect(of(events, "exec.step-skipped")).toMatchObject([{ stepId: "publish", reason: "condition-false" }]);
    expect(of(events, "exec.completed")).toHaveLength(1);
  });
});
