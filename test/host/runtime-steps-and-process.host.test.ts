import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { decodeJson, Heartbeat, type DagDefinition, type DagInput } from "../../contracts/index.ts";
import { DagDefinition as DagSchema } from "../../contracts/index.ts";
import { heartbeatSubject, runRef } from "../../streams/index.ts";
import {
  admitAndDispatch,
  openControlPlaneDouble,
  waitForAggregate,
  waitForJournal,
  type ControlPlaneDouble,
} from "../support/control-plane-double.ts";
import { uniqueName } from "../support/isolation.ts";
import { startLlmStub, type LlmStub } from "../support/llm-stub.ts";
import { startRuntimeProcess, type RuntimeProcess, type RuntimeProcessOptions } from "../support/runtime-process.ts";
import { startedExecutionId } from "../support/started-execution.ts";

// Boundary: a real runtime process calling real local HTTP servers (an OpenAI-compatible stub and an
// echo endpoint) over loopback sockets, journaling to a real nats-server. Loopback is outside the
// default egress policy: the tenant's allowlist names 127.0.0.1 (runtime-egress.host.test.ts proves the refusals).
const TENANT = "t-steps";
let cp: ControlPlaneDouble;
let tag: string;
let stub: LlmStub;
const started: RuntimeProcess[] = [];

beforeAll(async () => {
  tag = uniqueName("rtsteps");
  cp = await openControlPlaneDouble(inject("natsUrl"), tag);
  stub = await startLlmStub();
});
afterAll(async () => {
  await Promise.all(started.map((p) => p.kill()));
  await stub.close();
  await cp.close();
});

async function runtime(
  extra: { llmBaseUrl?: string; heartbeatMs?: number; sizing?: RuntimeProcessOptions["sizing"] } = {},
): Promise<RuntimeProcess> {
  const rt = await startRuntimeProcess({
    natsUrl: inject("natsUrl"),
    streamTag: tag,
    runtimeInstanceId: uniqueName("rt"),
    transport: "http",
    tenantId: TENANT,
    egress: { [TENANT]: { allow: ["127.0.0.1"] } },
    ...extra,
  });
  started.push(rt);
  return rt;
}

async function runToEnd(rt: RuntimeProcess, dag: DagDefinition, sharedRunId: string) {
  const localRunId = `${sharedRunId}-l1`;
  const dispatchedSeq = await admitAndDispatch(
    cp,
    {
      tenantId: TENANT,
      sharedRunId,
      localRunId,
      runtimeInstanceId: rt.runtimeInstanceId,
      hostIncarnation: rt.hostIncarnation,
      transport: "http",
    },
    dag,
  );
  const r = await rt.send({
    operation: "DispatchRun",
    payload: { sharedRunId, localRunId, tenantId: TENANT, dag, dispatchedSeq, correlationId: sharedRunId },
  } as never);
  expect(r, JSON.stringify(r)).toMatchObject({ success: true });
  const executionId = startedExecutionId(r.payload, sharedRunId, localRunId);
  return waitForJournal(cp, TENANT, executionId, (es) =>
    es.some((e) => e.event.type === "exec.completed" || e.event.type === "exec.failed"),
  );
}

const outputOf = (events: Awaited<ReturnType<typeof runToEnd>>, stepId: string) =>
  events.find((e) => e.event.type === "exec.step-completed" && (e.event.data as { stepId: string }).stepId === stepId)
    ?.event.data as { output: Record<string, unknown>; attempt: number } | undefined;

describe("step kinds that call out", () => {
  it("an llm step sends its prompt to the OpenAI-compatible endpoint and journals prompt and response; a 503 is retried per the step's policy", async () => {
    const rt = await runtime({ llmBaseUrl: stub.baseUrl });
    stub.failNext(1);
    const dag = DagSchema.parse({
      steps: [
        {
          id: "ask",
          kind: "llm",
          retry: { maxAttempts: 2, backoffMs: 10 },
          params: { model: "stub-model", system: "be brief", prompt: "name a colour" },
        },
      ],
    } satisfies DagInput);
    const events = await runToEnd(rt, dag, "run-llm");
    const out = outputOf(events, "ask");
    expect(out?.attempt).toBe(2);
    expect(out?.output).toMatchObject({
      model: "stub-model",
      prompt: "name a colour",
      system: "be brief",
      response: "echo: name a colour",
      finishReason: "stop",
    });
    const calls = stub.requests.filter((r) => r.path === "/v1/chat/completions");
    expect(calls).toHaveLength(2);
    expect(calls[1]?.body).toMatchObject({
      model: "stub-model",
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "name a colour" },
      ],
      temperature: 0,
    });
    const failed = events.find((e) => e.event.type === "exec.step-failed")?.event.data as { error: string };
    expect(failed.error).toContain("503");
  });

  it("an http step records the response before completing; a dependent step's input includes its output digest", async () => {
    const rt = await runtime();
    const dag = DagSchema.parse({
      steps: [
        { id: "call", kind: "http", params: { url: stub.echoUrl, method: "POST", body: "hello" } },
        { id: "after", kind: "compute", dependsOn: ["call"] },
      ],
    } satisfies DagInput);
    const events = await runToEnd(rt, dag, "run-http");
    const out = outputOf(events, "call")?.output;
    expect(out).toMatchObject({ status: 200, truncated: false });
    expect(JSON.parse(String(out?.body))).toEqual({ method: "POST", path: "/echo", body: "hello" });
    expect(outputOf(events, "after")?.output.digest).toMatch(/^[a-f0-9]{64}$/);
  });

  it("an llm step on a runtime without DROVER_LLM_BASE_URL fails the execution with step-attempts-exhausted and the run failed", async () => {
    const rt = await runtime();
    const dag = DagSchema.parse({
      steps: [{ id: "ask", kind: "llm", params: { model: "m", prompt: "p" } }],
    } satisfies DagInput);
    const events = await runToEnd(rt, dag, "run-nollm");
    expect(events.at(-1)?.event).toMatchObject({
      type: "exec.failed",
      data: { stepId: "ask", reason: { code: "step-attempts-exhausted" } },
    });
    const run = await waitForAggregate(cp, runRef(TENANT, "run-nollm"), (es) =>
      es.some((e) => e.event.type === "run.failed"),
    );
    expect(run.at(-1)?.event.type).toBe("run.failed");
  });
});

describe("waiting without a worker", () => {
  it("a sleeping step holds no worker: on a one-worker runtime another run starts and completes while the first run's step sleeps", async () => {
    const rt = await runtime({
      sizing: { workers: 1, maxConcurrentRuns: 2, localQueueCapacity: 2, maxWorkersPerRun: 1 },
    });
    const nap = DagSchema.parse({
      steps: [{ id: "nap", kind: "sleep", params: { durationMs: 4000 } }],
    } satisfies DagInput);
    const busy = DagSchema.parse({
      steps: [
        { id: "a", kind: "compute" },
        { id: "b", kind: "compute", dependsOn: ["a"] },
        { id: "c", kind: "compute", dependsOn: ["b"] },
      ],
    } satisfies DagInput);
    const napping = runToEnd(rt, nap, "run-nap");
    await rt.waitForLine((l) => l.event === "first-step-started" && l.stepId === "nap");
    const other = await runToEnd(rt, busy, "run-busy");
    const napped = await napping;
    const at = (es: typeof other, type: string) => es.find((e) => e.event.type === type)?.time.getTime() ?? NaN;
    expect(other.at(-1)?.event.type).toBe("exec.completed");
    expect(napped.at(-1)?.event.type).toBe("exec.completed");
    // The other run began after the timer was durable and ended before it fired: the one worker was free meanwhile.
    expect(at(other, "exec.started")).toBeGreaterThanOrEqual(at(napped, "exec.timer-started"));
    expect(at(other, "exec.completed")).toBeLessThan(at(napped, "exec.step-completed"));
  });
});

describe("runtime process lifecycle", () => {
  it("heartbeats carry a monotonic beat and local facts only (the strict schema has no endpoint, tenant or route)", async () => {
    const rt = await runtime({ heartbeatMs: 100 });
    const sub = cp.nc.subscribe(heartbeatSubject(cp.layout, rt.runtimeInstanceId), { max: 3 });
    const beats = [];
    for await (const m of sub) beats.push(decodeJson(Heartbeat, m.data, "heartbeat"));
    expect(beats.map((b) => b.beat)).toEqual([beats[0]!.beat, beats[0]!.beat + 1, beats[0]!.beat + 2]);
    expect(beats[0]).toMatchObject({
      runtimeInstanceId: rt.runtimeInstanceId,
      hostIncarnation: rt.hostIncarnation,
      workers: 2,
      paused: false,
      draining: false,
    });
  });

  it("SIGTERM drains: accepted work finishes, a last heartbeat says draining, and the process exits 0", async () => {
    const rt = await runtime({ heartbeatMs: 5000 });
    const dag = DagSchema.parse({
      steps: [{ id: "a", kind: "sleep", params: { durationMs: 300 } }],
    } satisfies DagInput);
    const dispatchedSeq = await admitAndDispatch(
      cp,
      {
        tenantId: TENANT,
        sharedRunId: "run-term",
        localRunId: "lr-term",
        runtimeInstanceId: rt.runtimeInstanceId,
        hostIncarnation: rt.hostIncarnation,
        transport: "http",
      },
      dag,
    );
    const r = await rt.send({
      operation: "DispatchRun",
      payload: {
        sharedRunId: "run-term",
        localRunId: "lr-term",
        tenantId: TENANT,
        dag,
        dispatchedSeq,
        correlationId: "c",
      },
    } as never);
    const sub = cp.nc.subscribe(heartbeatSubject(cp.layout, rt.runtimeInstanceId));
    const draining = (async () => {
      for await (const m of sub) if (decodeJson(Heartbeat, m.data).draining) return true;
      return false;
    })();
    process.kill(rt.pid, "SIGTERM");
    expect(await rt.exited).toEqual({ code: 0, signal: null });
    expect(await draining).toBe(true);
    sub.unsubscribe();
    const executionId = String((r.payload.run as { executionId: string }).executionId);
    await waitForJournal(cp, TENANT, executionId, (es) => es.some((e) => e.event.type === "exec.completed"), 5000);
  });

  it("SIGTERM on a paused queue hands the queued run back: nothing is written for it and the process exits 0 instead of waiting forever", async () => {
    const rt = await runtime({ heartbeatMs: 5000 });
    await rt.send({ operation: "PauseQueue", payload: {} } as never);
    const dag = DagSchema.parse({ steps: [{ id: "a", kind: "compute" }] } satisfies DagInput);
    const dispatchedSeq = await admitAndDispatch(
      cp,
      {
        tenantId: TENANT,
        sharedRunId: "run-term-paused",
        localRunId: "lr-term-paused",
        runtimeInstanceId: rt.runtimeInstanceId,
        hostIncarnation: rt.hostIncarnation,
        transport: "http",
      },
      dag,
    );
    const r = await rt.send({
      operation: "DispatchRun",
      payload: {
        sharedRunId: "run-term-paused",
        localRunId: "lr-term-paused",
        tenantId: TENANT,
        dag,
        dispatchedSeq,
        correlationId: "c",
      },
    } as never);
    expect(r.payload.run).toMatchObject({ state: "queued" });
    process.kill(rt.pid, "SIGTERM");
    const exited = await Promise.race([
      rt.exited,
      new Promise((ok) => setTimeout(() => ok("still running 10 s after SIGTERM"), 10_000)),
    ]);
    expect(exited).toEqual({ code: 0, signal: null });
    expect(rt.lines.find((l) => l.event === "drained")).toMatchObject({ handedBack: ["lr-term-paused"] });
    expect((await cp.store.read(runRef(TENANT, "run-term-paused"))).lastSeq).toBe(dispatchedSeq);
  });

  it("refuses to start with a bad or missing variable: exit code 2 and one line naming each variable", async () => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", resolve(import.meta.dirname, "../../services/runtime/main.ts")],
      {
        env: { PATH: process.env.PATH ?? "", DROVER_RUNTIME_INSTANCE_ID: "Bad_Id", DROVER_WORKERS: "0" },
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const code = await new Promise<number | null>((ok) => child.once("exit", ok));
    expect(code).toBe(2);
    expect(stderr).toMatch(/DROVER_RUNTIME_INSTANCE_ID is invalid/);
    expect(stderr).toMatch(/DROVER_WORKERS is invalid/);
    expect(stderr).toMatch(/NATS_URL is required/);
  });
});
