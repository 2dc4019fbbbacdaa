import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DagDefinition, RuntimeCommandResult, Transport } from "../../contracts/index.ts";
import { sendRawCommand } from "../../platform/runtime-client.ts";
import { execRef, runRef } from "../../streams/index.ts";
import {
  admitAndDispatch,
  chainDag,
  journal,
  openControlPlaneDouble,
  waitForAggregate,
  waitForJournal,
  type ControlPlaneDouble,
} from "../support/control-plane-double.ts";
import { uniqueName } from "../support/isolation.ts";
import { startRuntimeProcess, type RuntimeProcess } from "../support/runtime-process.ts";

// Boundary: the command API of a real runtime process over a real socket, HTTP/1.1 (fastify) and
// gRPC (h2c); the same assertions run on both transports, so they must give the same results.
const TENANT = "t-cmd";
let cp: ControlPlaneDouble;
let tag: string;
const started: RuntimeProcess[] = [];

beforeAll(async () => {
  tag = uniqueName("rtcmd");
  cp = await openControlPlaneDouble(inject("natsUrl"), tag);
});
afterAll(async () => {
  await Promise.all(started.map((p) => p.kill()));
  await cp.close();
});

async function runtime(transport: Transport, sizing = {}): Promise<RuntimeProcess> {
  const rt = await startRuntimeProcess({
    natsUrl: inject("natsUrl"),
    streamTag: tag,
    runtimeInstanceId: uniqueName(`rt-${transport}`),
    transport,
    tenantId: TENANT,
    sizing,
  });
  started.push(rt);
  return rt;
}

const eventStreamLastSeq = async () =>
  (await (await jetstreamManager(cp.nc)).streams.info(cp.layout.eventStream)).state.last_seq;

async function dispatch(
  rt: RuntimeProcess,
  dag: DagDefinition,
  sharedRunId: string,
  localRunId: string,
  seq?: number,
): Promise<RuntimeCommandResult> {
  const dispatchedSeq =
    seq ??
    (await admitAndDispatch(
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
    ));
  return rt.send({
    operation: "DispatchRun",
    payload: { sharedRunId, localRunId, tenantId: TENANT, dag, dispatchedSeq, correlationId: sharedRunId },
  } as never);
}

describe.each(["http", "grpc"] as const)("runtime command API over %s", (transport) => {
  let rt: RuntimeProcess;
  beforeAll(async () => {
    rt = await runtime(transport, { maxConcurrentRuns: 2, localQueueCapacity: 2 });
  });
  const probe = (overrides: Record<string, unknown> = {}) => ({
    operation: "GetQueueStatus",
    runtimeInstanceId: rt.runtimeInstanceId,
    correlationId: "probe",
    payload: {},
    ...overrides,
  });

  it("GetQueueStatus is an identity probe: it names this RuntimeInstanceId and host incarnation with queue depth and slots", async () => {
    const r = await rt.send({ operation: "GetQueueStatus", payload: {} } as never);
    expect(r).toMatchObject({
      success: true,
      operation: "GetQueueStatus",
      runtimeInstanceId: rt.runtimeInstanceId,
      hostIncarnation: rt.hostIncarnation,
    });
    expect(r.hostIncarnation).toMatch(new RegExp(`^pid:${rt.pid}:\\d+$`));
    expect(r.payload.queue).toEqual({
      hostIncarnation: rt.hostIncarnation,
      queuedRuns: 0,
      runningRuns: 0,
      parkedRuns: 0,
      availableSlots: 4,
      workers: 2,
      availableWorkers: 2,
      paused: false,
      draining: false,
    });
  });

  it("refuses a routing header naming another runtime as runtime-misdirected, and still names itself", async () => {
    const r = await sendRawCommand(
      rt.endpoint,
      transport,
      probe(),
      { routing: "rt-someone-else", token: rt.token },
      5000,
    );
    expect(r).toMatchObject({
      success: false,
      failureReason: "runtime-misdirected",
      runtimeInstanceId: rt.runtimeInstanceId,
      hostIncarnation: rt.hostIncarnation,
    });
    const none = await sendRawCommand(rt.endpoint, transport, probe(), { token: rt.token }, 5000);
    expect(none.failureReason).toBe("runtime-misdirected");
  });

  it("refuses a body targeting another RuntimeInstanceId as runtime-misdirected even with this runtime's header and token", async () => {
    const r = await sendRawCommand(
      rt.endpoint,
      transport,
      probe({ runtimeInstanceId: "rt-someone-else" }),
      { routing: rt.runtimeInstanceId, token: rt.token },
      5000,
    );
    expect(r).toMatchObject({
      success: false,
      failureReason: "runtime-misdirected",
      runtimeInstanceId: rt.runtimeInstanceId,
    });
  });

  it("refuses a command without the instance token, or with another token, as command-unauthorized", async () => {
    const missing = await sendRawCommand(rt.endpoint, transport, probe(), { routing: rt.runtimeInstanceId }, 5000);
    expect(missing).toMatchObject({
      success: false,
      failureReason: "command-unauthorized",
      runtimeInstanceId: rt.runtimeInstanceId,
      hostIncarnation: rt.hostIncarnation,
    });
    const wrong = await sendRawCommand(
      rt.endpoint,
      transport,
      probe(),
      { routing: rt.runtimeInstanceId, token: `${rt.token.slice(1)}x` },
      5000,
    );
    expect(wrong.failureReason).toBe("command-unauthorized");
  });

  it("refuses malformed commands (unknown operation, missing payload, non-JSON) with contract-violation and a cyclic DAG with dag-invalid, writing nothing", async () => {
    const before = await eventStreamLastSeq();
    const h = { routing: rt.runtimeInstanceId, token: rt.token };
    expect(await sendRawCommand(rt.endpoint, transport, probe({ operation: "Reboot" }), h, 5000)).toMatchObject({
      success: false,
      failureReason: "contract-violation",
      operation: "Reboot",
    });
    expect(
      (
        await sendRawCommand(
          rt.endpoint,
          transport,
          { operation: "DispatchRun", runtimeInstanceId: rt.runtimeInstanceId, correlationId: "x" },
          h,
          5000,
        )
      ).failureReason,
    ).toBe("contract-violation");
    expect((await sendRawCommand(rt.endpoint, transport, "not a command", h, 5000)).failureReason).toBe(
      "contract-violation",
    );
    const cyclic = {
      steps: [
        { id: "a", kind: "compute", dependsOn: ["b"] },
        { id: "b", kind: "compute", dependsOn: ["a"] },
      ],
    };
    const bad = await sendRawCommand(
      rt.endpoint,
      transport,
      {
        operation: "DispatchRun",
        runtimeInstanceId: rt.runtimeInstanceId,
        correlationId: "x",
        payload: {
          sharedRunId: "run-cyclic",
          localRunId: "lr-cyclic",
          tenantId: TENANT,
          dag: cyclic,
          dispatchedSeq: 1,
          correlationId: "x",
        },
      },
      h,
      5000,
    );
    expect(bad).toMatchObject({ success: false, failureReason: "dag-invalid" });
    expect(bad.failureDetail).toContain("dependency cycle");
    expect(await eventStreamLastSeq()).toBe(before);
    expect(
      (await rt.send({ operation: "GetRunStatus", payload: { localRunId: "lr-cyclic" } } as never)).payload.run,
    ).toEqual({ localRunId: "lr-cyclic", state: "unknown" });
  });

  it("refuses a DispatchRun whose dispatchedSeq is another LocalRunId's dispatch (to another runtime) with contract-violation, writing nothing", async () => {
    const dag = chainDag(2, 0);
    const sharedRunId = `run-foreign-${transport}`;
    const seq = await admitAndDispatch(
      cp,
      {
        tenantId: TENANT,
        sharedRunId,
        localRunId: `lr-placed-${transport}`,
        runtimeInstanceId: "rt-other",
        hostIncarnation: rt.hostIncarnation,
        transport,
      },
      dag,
    );
    const before = await eventStreamLastSeq();
    // The sequence is the run's latest, so a conditional append alone would accept run started here.
    const r = await dispatch(rt, dag, sharedRunId, `lr-foreign-${transport}`, seq);
    expect(r).toMatchObject({
      success: false,
      failureReason: "contract-violation",
      runtimeInstanceId: rt.runtimeInstanceId,
      hostIncarnation: rt.hostIncarnation,
    });
    expect(r.failureDetail).toContain(`dispatched LocalRunId lr-placed-${transport}, not lr-foreign-${transport}`);
    expect(await eventStreamLastSeq()).toBe(before);
    expect(
      (await rt.send({ operation: "GetRunStatus", payload: { localRunId: `lr-foreign-${transport}` } } as never))
        .payload.run,
    ).toEqual({ localRunId: `lr-foreign-${transport}`, state: "unknown" });
  });

  it("DispatchRun is idempotent per LocalRunId: a repeat answers duplicate with the same ExecutionId and starts nothing twice", async () => {
    const dag = chainDag(3, 20);
    const sharedRunId = `run-idem-${transport}`;
    const first = await dispatch(rt, dag, sharedRunId, `lr-idem-${transport}`);
    const repeat = await dispatch(rt, dag, sharedRunId, `lr-idem-${transport}`, 1);
    expect(first.payload).toMatchObject({ duplicate: false });
    expect(repeat.payload).toMatchObject({ duplicate: true });
    const executionId = String((repeat.payload.run as { executionId: string }).executionId);
    expect((first.payload.run as { executionId?: string }).executionId ?? executionId).toBe(executionId);
    const events = await waitForJournal(cp, TENANT, executionId, (es) =>
      es.some((e) => e.event.type === "exec.completed"),
    );
    expect(events.filter((e) => e.event.type === "exec.started")).toHaveLength(1);
    const run = (await cp.store.read(runRef(TENANT, sharedRunId))).events;
    expect(run.filter((e) => e.event.type === "run.started")).toHaveLength(1);
  });

  it("a run whose dispatched event is no longer the run's latest (requeued after dispatch) is not started: nothing is written", async () => {
    const dag = chainDag(2, 0);
    const sharedRunId = `run-stale-${transport}`;
    const seq = await admitAndDispatch(
      cp,
      {
        tenantId: TENANT,
        sharedRunId,
        localRunId: `lr-stale-${transport}`,
        runtimeInstanceId: rt.runtimeInstanceId,
        hostIncarnation: rt.hostIncarnation,
        transport,
      },
      dag,
    );
    // Admission moved the run on (a second placement) before this runtime started it.
    await admitAndDispatch(
      cp,
      {
        tenantId: TENANT,
        sharedRunId,
        localRunId: `lr-stale2-${transport}`,
        runtimeInstanceId: "rt-other",
        hostIncarnation: rt.hostIncarnation,
        transport,
      },
      dag,
    );
    const r = await dispatch(rt, dag, sharedRunId, `lr-stale-${transport}`, seq);
    expect(r.success).toBe(true);
    const status = await rt.waitForLine(
      (l) => l.event === "execution-ownership-lost" && l.localRunId === `lr-stale-${transport}`,
    );
    expect(String(status.detail)).toContain(`after sequence ${seq}`);
    const run = (await cp.store.read(runRef(TENANT, sharedRunId))).events.map((e) => e.event.type);
    expect(run).not.toContain("run.started");
    const executionId = String((r.payload.run as { executionId?: string }).executionId ?? "");
    expect(executionId === "" || (await cp.store.lastSeq(execRef(TENANT, executionId))) === 0).toBe(true);
  });
});

describe.each(["http", "grpc"] as const)("local queue control over %s", (transport) => {
  it("a full local queue refuses DispatchRun with local-queue-full and the counts; PauseQueue holds runs, ResumeQueue runs them", async () => {
    const rt = await runtime(transport, { maxConcurrentRuns: 1, localQueueCapacity: 1 });
    expect((await rt.send({ operation: "PauseQueue", payload: {} } as never)).payload.queue).toMatchObject({
      paused: true,
      availableSlots: 1,
    });
    const dag = chainDag(2, 0);
    const ok = await dispatch(rt, dag, `run-q1-${transport}`, `lr-q1-${transport}`);
    expect(ok.payload.run).toMatchObject({ state: "queued" });
    const full = await dispatch(rt, dag, `run-q2-${transport}`, `lr-q2-${transport}`);
    expect(full).toMatchObject({
      success: false,
      failureReason: "local-queue-full",
      runtimeInstanceId: rt.runtimeInstanceId,
    });
    expect(full.failureDetail).toBe("local queue full: queued=1/1, running=0/1, paused=true");
    expect(full.payload.details).toMatchObject({ queuedRuns: 1, availableSlots: 0, paused: true });
    await rt.send({ operation: "ResumeQueue", payload: {} } as never);
    const executionId = String(
      (
        (await rt.send({ operation: "GetRunStatus", payload: { localRunId: `lr-q1-${transport}` } } as never)).payload
          .run as { executionId: string }
      ).executionId,
    );
    await waitForJournal(cp, TENANT, executionId, (es) => es.some((e) => e.event.type === "exec.completed"));
  });

  it("CancelRun removes a queued run without writing, and ends a running one with exec cancelled and run cancelled", async () => {
    const rt = await runtime(transport, { maxConcurrentRuns: 1, localQueueCapacity: 1 });
    const long = chainDag(200, 50);
    const running = await dispatch(rt, long, `run-c1-${transport}`, `lr-c1-${transport}`);
    const queued = await dispatch(rt, chainDag(2, 0), `run-c2-${transport}`, `lr-c2-${transport}`);
    expect(queued.payload.run).toMatchObject({ state: "queued" });
    const c2 = await rt.send({ operation: "CancelRun", payload: { localRunId: `lr-c2-${transport}` } } as never);
    expect(c2.payload.run).toMatchObject({ state: "cancelled" });
    expect((await cp.store.read(runRef(TENANT, `run-c2-${transport}`))).events.map((e) => e.event.type)).not.toContain(
      "run.started",
    );
    const executionId = String((running.payload.run as { executionId: string }).executionId);
    await waitForJournal(cp, TENANT, executionId, (es) => es.some((e) => e.event.type === "exec.step-completed"));
    await rt.send({ operation: "CancelRun", payload: { localRunId: `lr-c1-${transport}` } } as never);
    const events = await waitForJournal(cp, TENANT, executionId, (es) =>
      es.some((e) => e.event.type === "exec.cancelled"),
    );
    expect(events.at(-1)?.event.type).toBe("exec.cancelled");
    const run = await waitForAggregate(cp, runRef(TENANT, `run-c1-${transport}`), (es) =>
      es.some((e) => e.event.type === "run.cancelled"),
    );
    expect(run.map((e) => e.event.type).slice(-2)).toEqual(["run.started", "run.cancelled"]);
    expect(
      (await journal(cp, TENANT, executionId)).filter((e) => e.event.type === "exec.step-completed").length,
    ).toBeLessThan(200);
  });

  it("Drain refuses new runs with runtime-draining while accepted runs finish", async () => {
    const rt = await runtime(transport, { maxConcurrentRuns: 1, localQueueCapacity: 1 });
    const r = await dispatch(rt, chainDag(5, 20), `run-d1-${transport}`, `lr-d1-${transport}`);
    const drained = await rt.send({ operation: "Drain", payload: {} } as never);
    expect(drained.payload.queue).toMatchObject({ draining: true });
    const refused = await dispatch(rt, chainDag(1, 0), `run-d2-${transport}`, `lr-d2-${transport}`);
    expect(refused).toMatchObject({ success: false, failureReason: "runtime-draining" });
    const executionId = String((r.payload.run as { executionId: string }).executionId);
    await waitForJournal(cp, TENANT, executionId, (es) => es.some((e) => e.event.type === "exec.completed"));
  });
});
