import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DagDefinition, Heartbeat } from "../../contracts/index.ts";
import { execRef, heartbeatSubject, type StoredEvent } from "../../streams/index.ts";
import { admitAndDispatch, openControlPlaneDouble, type ControlPlaneDouble } from "../support/control-plane-double.ts";
import { signalAsApi } from "../support/api-signal.ts";
import { uniqueName } from "../support/isolation.ts";
import { startRuntimeProcess, type RuntimeProcess } from "../support/runtime-process.ts";
import { startedExecutionId } from "../support/started-execution.ts";

// Boundary: one real runtime process with 2 run slots (maxConcurrentRuns) and no local queue on a
// real nats-server; the test plays admission (admitted + dispatched) and the API's signal event.
// Six waiting executions park (give their slots back), other runs use the slots meanwhile, and
// signalling all six at once resumes each exactly once, never more than two at a time.
const TENANT = "t-waitpark";
const N = 6;
let cp: ControlPlaneDouble;
let rt: RuntimeProcess;

beforeAll(async () => {
  const tag = uniqueName("waitpark");
  cp = await openControlPlaneDouble(inject("natsUrl"), tag);
  rt = await startRuntimeProcess({
    natsUrl: inject("natsUrl"),
    streamTag: tag,
    runtimeInstanceId: uniqueName("rt"),
    transport: "http",
    tenantId: TENANT,
    heartbeatMs: 200,
    sizing: { workers: 2, maxWorkersPerRun: 1, maxConcurrentRuns: 2, localQueueCapacity: 0 },
  });
});
afterAll(async () => {
  await rt?.kill();
  await cp?.close();
});

// Long enough for what must happen while they run on a loaded machine: the two work runs' starts
// before either ends, and the late dispatch while resumed executions still hold both slots (three
// rounds of AFTER_MS); 400 and 500 ms left a slow round trip outside those windows.
const AFTER_MS = 1_500;
const waitDag = DagDefinition.parse({
  steps: [
    { id: "review", kind: "wait", params: { name: "approval", timeoutMs: 600_000 } },
    { id: "after", kind: "compute", dependsOn: ["review"], params: { durationMs: AFTER_MS } },
  ],
});
const workDag = DagDefinition.parse({ steps: [{ id: "work", kind: "compute", params: { durationMs: 1_500 } }] });

interface Dispatched {
  readonly sharedRunId: string;
  readonly executionId?: string;
  readonly failureReason?: string;
}
async function dispatch(dag: DagDefinition, prefix: string): Promise<Dispatched> {
  const sharedRunId = uniqueName(prefix);
  const placement = { tenantId: TENANT, sharedRunId, localRunId: `${sharedRunId}-l1` };
  const dispatchedSeq = await admitAndDispatch(
    cp,
    { ...placement, transport: "http", runtimeInstanceId: rt.runtimeInstanceId, hostIncarnation: rt.hostIncarnation },
    dag,
  );
  const r = await rt.send({
    operation: "DispatchRun",
    payload: { ...placement, dag, dispatchedSeq, correlationId: sharedRunId },
  } as never);
  if (!r.success) return { sharedRunId, failureReason: String(r.failureReason) };
  return { sharedRunId, executionId: startedExecutionId(r.payload, placement.sharedRunId, placement.localRunId) };
}

const queue = async () =>
  (await rt.send({ operation: "GetQueueStatus", payload: {} } as never)).payload.queue as Record<string, number>;
const events = async (executionId: string) => (await cp.store.read(execRef(TENANT, executionId))).events;
const ofType = (es: readonly StoredEvent[], type: string) => es.filter((e) => e.event.type === type);
async function until<T>(check: () => Promise<T | undefined | false>, what: string, ms = 60_000): Promise<T> {
  const deadline = performance.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (performance.now() > deadline) throw new Error(`not reached in ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("waiting executions park: a runtime with 2 run slots holds 6 open waits", () => {
  it("the parked waits leave both slots free (GetQueueStatus and the heartbeat), two other runs run meanwhile; signalled all at once, each resumes exactly once with its ExecutionId, at most 2 at a time, and the resumed ones queue ahead of new runs (a dispatch meanwhile is refused local-queue-full); a parked run is cancelled without a slot", async () => {
    const waits: Dispatched[] = [];
    for (let i = 0; i < N; i++) {
      const d = await dispatch(waitDag, "run-park");
      expect(d.failureReason).toBeUndefined();
      waits.push(d);
      // Each wait opens and parks before the next is placed: with 2 slots and no queue, 6 fit only so.
      await until(
        async () => {
          const q = await queue();
          return q.parkedRuns === i + 1 && q.runningRuns === 0;
        },
        `wait ${i + 1} parked`,
      );
    }
    expect(await queue()).toMatchObject({ runningRuns: 0, parkedRuns: N, queuedRuns: 0, availableSlots: 2 });
    // The heartbeat (what admission places by) shows both slots free.
    const jsm = await jetstreamManager(cp.nc);
    const beat = await until(async () => {
      const m = await jsm.direct.getMessage(cp.layout.heartbeatStream, {
        last_by_subj: heartbeatSubject(cp.layout, rt.runtimeInstanceId),
      });
      const hb = m ? Heartbeat.parse(m.json()) : undefined;
      return hb && hb.runningRuns === 0 && hb.availableSlots === 2 ? hb : undefined;
    }, "a heartbeat with both slots free");
    expect(beat).toMatchObject({ runningRuns: 0, queuedRuns: 0, availableSlots: 2 });

    // A seventh parks too, and a CancelRun ends it while parked (no slot needed to end).
    const seventh = await dispatch(waitDag, "run-cancel");
    await until(async () => (await queue()).parkedRuns === N + 1, "a seventh wait parked");
    const cancel = await rt.send({
      operation: "CancelRun",
      payload: { localRunId: `${seventh.sharedRunId}-l1` },
    } as never);
    expect(cancel.success, JSON.stringify(cancel)).toBe(true);
    await until(async () => ofType(await events(seventh.executionId!), "exec.cancelled").length === 1, "cancelled");
    await until(async () => (await queue()).parkedRuns === N, "the cancelled run left the parked count");
    expect(ofType(await events(seventh.executionId!), "exec.wait-resolved")).toHaveLength(0);

    // Two other runs take the two slots and complete side by side while the six wait.
    const work = await Promise.all([dispatch(workDag, "run-work"), dispatch(workDag, "run-work")]);
    for (const w of work) expect(w.failureReason).toBeUndefined();
    const workJournals = await until(async () => {
      const js = await Promise.all(work.map((w) => events(w.executionId!)));
      return js.every((es) => ofType(es, "exec.completed").length === 1) && js;
    }, "two runs completed while the waits were parked");
    const starts = workJournals.map((es) => ofType(es, "exec.started")[0]!.time.getTime());
    const ends = workJournals.map((es) => ofType(es, "exec.completed")[0]!.time.getTime());
    expect(Math.max(...starts)).toBeLessThan(Math.min(...ends));
    for (const w of waits) expect(ofType(await events(w.executionId!), "exec.wait-resolved")).toHaveLength(0);
    await until(async () => (await queue()).runningRuns === 0, "the two runs' slots given back");

    // Signal all six at once: two take the slots, four queue for them ahead of any new run.
    await Promise.all(waits.map((w) => signalAsApi(cp, TENANT, w.sharedRunId, "approval", { approved: true })));
    await until(async () => ((await queue()).queuedRuns ?? 0) > 0, "resumed executions queued for a slot", 10_000);
    const late = await dispatch(workDag, "run-late");
    expect(late.failureReason).toBe("local-queue-full");

    const journals = await until(async () => {
      const js = await Promise.all(waits.map((w) => events(w.executionId!)));
      return js.every((es) => ofType(es, "exec.completed").length === 1) && js;
    }, "every signalled wait completed");
    const spans: [number, number][] = [];
    for (const es of journals) {
      expect(ofType(es, "exec.wait-opened")).toHaveLength(1);
      expect(ofType(es, "exec.wait-resolved").map((e) => e.event.data)).toMatchObject([{ by: "signal" }]);
      const after = ofType(es, "exec.step-completed").filter(
        (e) => (e.event.data as { stepId: string }).stepId === "after",
      );
      expect(after).toHaveLength(1);
      expect(ofType(es, "exec.resumed")).toHaveLength(0);
      const end = Date.parse(after[0]!.event.occurredAt);
      spans.push([end - (after[0]!.event.data as { durationMs: number }).durationMs, end]);
    }
    // At most 2 resumed executions ran their next step at once (the runtime's clock, the journal's spans).
    const overlap = Math.max(...spans.map(([s]) => spans.filter(([a, b]) => a <= s && s < b).length));
    expect(overlap).toBeLessThanOrEqual(2);
    const unparked = rt.lines.filter((l) => l.event === "execution-unparked");
    const slotWaits = unparked.map((l) => Number(l.slotWaitMs));
    expect(unparked.filter((l) => waits.some((w) => w.executionId === l.executionId))).toHaveLength(N);
    expect(slotWaits.filter((ms) => ms >= AFTER_MS / 2).length).toBeGreaterThanOrEqual(N - 2);
    // Each execution gives its slot back once its run's own terminal event is written (after exec.completed).
    await until(async () => (await queue()).runningRuns === 0, "every slot given back");
    expect(await queue()).toMatchObject({ runningRuns: 0, parkedRuns: 0, queuedRuns: 0, availableSlots: 2 });
    console.log(
      `[measure] ${N} parked waits on 2 slots: at most ${overlap} resumed at once; slot waits after the signal ` +
        `${slotWaits.sort((a, b) => a - b).join(", ")} ms`,
    );
  });
});
