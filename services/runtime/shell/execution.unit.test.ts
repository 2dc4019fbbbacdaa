import { describe, expect, it } from "vitest";
import {
  buildEvent,
  DagDefinition,
  HostIncarnation,
  LocalRunId,
  RuntimeInstanceId,
  SharedRunId,
  TenantId,
  type DagInput,
  type DroverEvent,
  type EventOrigin,
  type Step,
} from "../../../contracts/index.ts";
import { execRef, runRef } from "../../../streams/subjects.ts";
import { eventData } from "../../../test/support/event-data.ts";
import { MemoryEventStore } from "../../../test/support/memory-event-store.ts";
import { Execution } from "./execution.ts";
import { checkDispatched, executionIdFor, openFresh, openResume, type JournalEnv } from "./execution-open.ts";
import { AggregateJournal } from "./journal.ts";
import type { StepRunner } from "./step-runners.ts";
import { WorkerPool } from "./worker-pool.ts";

// Unit tier with an in-memory event store: proves the executor's decisions and fencing reactions,
// NOT any transport or JetStream behaviour (the host tier proves those against real processes).
const T = "t1";
let ids = 0;
const journalEnv = (store: MemoryEventStore, runtimeInstanceId = "rt-a"): JournalEnv => ({
  store,
  runtimeInstanceId: RuntimeInstanceId.parse(runtimeInstanceId),
  hostIncarnation: HostIncarnation.parse("pid:1:1"),
  clock: { now: () => new Date(1_000_000) },
  newEventId: () => `ev-${++ids}`,
  sleep: async () => undefined,
});
const chain = (n: number): DagDefinition =>
  DagDefinition.parse({
    steps: Array.from({ length: n }, (_, i) => ({ id: `s${i + 1}`, kind: "compute", dependsOn: i ? [`s${i}`] : [] })),
  } satisfies DagInput);
const payload = (dag: DagDefinition, localRunId = "l1") =>
  ({ sharedRunId: "r1", localRunId, tenantId: T, dag, dispatchedSeq: 0, correlationId: "c1" }) as Parameters<
    typeof openFresh
  >[1];

function recordingRunner(onStep?: (step: Step, attempt: number) => Promise<void> | void): {
  runner: StepRunner;
  calls: string[];
} {
  const calls: string[] = [];
  return {
    calls,
    runner: async (step, ctx) => {
      calls.push(`${step.id}#${ctx.attempt}`);
      await onStep?.(step, ctx.attempt);
      return { ok: step.id };
    },
  };
}
const executor = (runner: StepRunner, workers = new WorkerPool(2)) => ({
  workers,
  maxWorkersPerRun: 1,
  runStep: runner,
  clock: { now: () => new Date(1_000_000) },
  log: () => undefined,
});
const eid = (run: string, local: string) => executionIdFor(SharedRunId.parse(run), LocalRunId.parse(local));
const types = (store: MemoryEventStore, ref = execRef(T, eid("r1", "l1"))) =>
  store.read(ref).then((h) => h.events.map((e) => e.event.type));

describe("AggregateJournal: the runtime is the single writer of its execution (in-memory store; proves no transport)", () => {
  it("after a version conflict, the journal is lost: that append and every queued one fail with execution-ownership-lost and none is sent", async () => {
    const store = new MemoryEventStore();
    const opened = await openFresh(journalEnv(store), payload(chain(2)));
    // A foreign writer (recovery) appends after the runtime's last sequence.
    await store.append(
      opened.exec.ref,
      opened.emit(
        "exec.paused-for-recovery",
        eventData("exec.paused-for-recovery", {
          forensicsId: `runtime-recovery:${eid("r1", "l1")}:r1:l1`,
          incidentId: "i1",
          failedRuntimeInstanceId: "rt-a",
          newEpoch: 1,
        }),
      ),
      { expectedSeq: opened.exec.lastSeq, msgId: "recovery" },
    );
    const attemptsBefore = store.appendLog.length;
    const a = opened.exec.append(opened.emit("exec.completed", { outputDigest: "a".repeat(64) }));
    const b = opened.exec.append(opened.emit("exec.completed", { outputDigest: "b".repeat(64) }));
    await expect(a).rejects.toMatchObject({ code: "execution-ownership-lost" });
    await expect(b).rejects.toMatchObject({ code: "execution-ownership-lost" });
    expect(store.appendLog.length - attemptsBefore).toBe(1);
  });

  it("an append with no answer is retried with the same msg id and expectation, so it lands exactly once", async () => {
    const store = new MemoryEventStore();
    const opened = await openFresh(journalEnv(store), payload(chain(1)));
    store.failNext(2);
    await opened.exec.append(opened.emit("exec.completed", { outputDigest: "a".repeat(64) }));
    const tries = store.appendLog.slice(-3);
    expect(tries.map((t) => t.outcome)).toEqual(["unavailable", "unavailable", "stored"]);
    expect(new Set(tries.map((t) => `${t.msgId}@${t.expectedSeq}`)).size).toBe(1);
  });

  it("two writers deciding at the same expectation never share a msg id (a foreign decision cannot be acked as our duplicate)", () => {
    const store = new MemoryEventStore();
    const ref = execRef(T, "e1");
    const mine = new AggregateJournal(store, ref, 5, "rt-a.e0", async () => undefined);
    const theirs = new AggregateJournal(store, ref, 5, "rt-b.e1", async () => undefined);
    expect(mine.lastSeq).toBe(theirs.lastSeq);
    const ids = [mine, theirs].map((j) => j.writerKey);
    expect(ids[0]).not.toBe(ids[1]);
  });
});

describe("Execution: deterministic, durable, fenced (in-memory store; proves no transport)", () => {
  it("a fresh run appends run started (at the dispatched sequence), exec started, one step-completed per step, exec completed, run completed", async () => {
    const store = new MemoryEventStore();
    const { runner, calls } = recordingRunner();
    const opened = await openFresh(journalEnv(store), payload(chain(3)));
    expect(await new Execution(executor(runner), opened, chain(3), 0).run()).toEqual({ state: "completed" });
    expect(calls).toEqual(["s1#1", "s2#1", "s3#1"]);
    expect(await types(store)).toEqual([
      "exec.started",
      "exec.step-completed",
      "exec.step-completed",
      "exec.step-completed",
      "exec.completed",
    ]);
    expect(await types(store, runRef(T, "r1"))).toEqual(["run.started", "run.completed"]);
  });

  it("a resume never re-runs a recorded step and continues the attempt count from the journal (recovery consumes no retry budget)", async () => {
    const store = new MemoryEventStore();
    const dag = DagDefinition.parse({
      steps: [
        { id: "s1", kind: "compute" },
        {
          id: "s2",
          kind: "flaky",
          dependsOn: ["s1"],
          retry: { maxAttempts: 3, backoffMs: 0 },
          params: { failAttempts: 1 },
        },
      ],
    } satisfies DagInput);
    const first = await openFresh(journalEnv(store), payload(dag));
    await first.exec.append(
      first.emit(
        "exec.step-completed",
        eventData("exec.step-completed", {
          stepId: "s1",
          attempt: 1,
          output: { ok: "s1" },
          outputDigest: "a".repeat(64),
          durationMs: 1,
        }),
      ),
    );
    await first.exec.append(
      first.emit(
        "exec.step-failed",
        eventData("exec.step-failed", {
          stepId: "s2",
          attempt: 1,
          error: "x",
          retryAt: new Date(0).toISOString(),
        }),
      ),
    );
    const executionId = first.executionId;
    await store.append(
      first.exec.ref,
      first.emit(
        "exec.paused-for-recovery",
        eventData("exec.paused-for-recovery", {
          forensicsId: `runtime-recovery:${eid("r1", "l1")}:r1:l1`,
          incidentId: "i1",
          failedRuntimeInstanceId: "rt-a",
          newEpoch: 1,
        }),
      ),
      { expectedSeq: first.exec.lastSeq, msgId: "recovery" },
    );
    const { runner, calls } = recordingRunner();
    const resumed = await openResume(journalEnv(store, "rt-b"), {
      ...payload(dag, "l2"),
      executionId,
      epoch: 1,
      dispatchedSeq: await store.lastSeq(runRef(T, "r1")),
    });
    expect(await new Execution(executor(runner), resumed, dag, 0).run()).toEqual({ state: "completed" });
    expect(calls).toEqual(["s2#2"]);
    const tail = (await store.read(first.exec.ref)).events.slice(-3).map((e) => e.event as DroverEvent);
    expect(tail.map((e) => [e.type, e.writer.runtimeInstanceId, e.writer.epoch])).toEqual([
      ["exec.resumed", "rt-b", 1],
      ["exec.step-completed", "rt-b", 1],
      ["exec.completed", "rt-b", 1],
    ]);
  });

  it("given a journal that completed while its run's completed event was never written (the host died between them), when resumed at the next epoch, then no step runs, the journal gets nothing more and the run completes with the journal's digest and output", async () => {
    const store = new MemoryEventStore();
    const dag = chain(2);
    const first = await openFresh(journalEnv(store), payload(dag));
    for (const id of ["s1", "s2"])
      await first.exec.append(
        first.emit(
          "exec.step-completed",
          eventData("exec.step-completed", {
            stepId: id,
            attempt: 1,
            output: { ok: id },
            outputDigest: (id === "s1" ? "a" : "b").repeat(64),
            durationMs: 1,
          }),
        ),
      );
    await first.exec.append(first.emit("exec.completed", { outputDigest: "d".repeat(64) }));
    const journalBefore = await types(store, first.exec.ref);
    const resume = (epoch: number, localRunId: string) =>
      openResume(journalEnv(store, "rt-b"), {
        ...payload(dag, localRunId),
        executionId: first.executionId,
        epoch,
        dispatchedSeq: 1,
      });
    // Only the epoch recovery moved the run to (the journal's epoch + 1) may finish it.
    await expect(resume(2, "l2")).rejects.toThrow(/already completed; finishing its run takes epoch 1/);
    const { runner, calls } = recordingRunner();
    const resumed = await resume(1, "l2");
    expect(await new Execution(executor(runner), resumed, dag, 0).run()).toEqual({ state: "completed" });
    expect(calls).toEqual([]);
    expect(await types(store, first.exec.ref)).toEqual(journalBefore);
    const run = (await store.read(runRef(T, "r1"))).events.map((e) => e.event as DroverEvent);
    expect(run.map((e) => e.type)).toEqual(["run.started", "run.started", "run.completed"]);
    expect(run[2]).toMatchObject({
      data: { executionId: first.executionId, localRunId: "l2", outputDigest: "d".repeat(64), output: { ok: "s2" } },
      writer: { runtimeInstanceId: "rt-b", epoch: 1 },
    });
  });

  it("given a run started whose journal is empty (its host died between the two appends), when resumed at epoch 1, then the journal starts with exec started at epoch 1 and every step runs once", async () => {
    const store = new MemoryEventStore();
    const dag = chain(2);
    const executionId = eid("r1", "l1");
    const resume = (epoch: number) =>
      openResume(journalEnv(store, "rt-b"), { ...payload(dag, "l2"), executionId, epoch, dispatchedSeq: 0 });
    await expect(resume(2)).rejects.toThrow(/never started; starting it takes epoch 1, command says 2/);
    const { runner, calls } = recordingRunner();
    const opened = await resume(1);
    expect(await new Execution(executor(runner), opened, dag, 0).run()).toEqual({ state: "completed" });
    expect(calls).toEqual(["s1#1", "s2#1"]);
    const journal = (await store.read(execRef(T, executionId))).events.map((e) => e.event as DroverEvent);
    expect(journal.map((e) => [e.type, e.writer.runtimeInstanceId, e.writer.epoch])).toEqual([
      ["exec.started", "rt-b", 1],
      ["exec.step-completed", "rt-b", 1],
      ["exec.step-completed", "rt-b", 1],
      ["exec.completed", "rt-b", 1],
    ]);
    expect(journal[0]).toMatchObject({ data: { epoch: 1, localRunId: "l2" } });
  });

  it("a sleep step makes its timer durable before it waits; a resume sleeps only what is left of it and records no second timer", async () => {
    const store = new MemoryEventStore();
    const dag = DagDefinition.parse({
      steps: [{ id: "nap", kind: "sleep", params: { durationMs: 60_000 } }],
    } satisfies DagInput);
    const sleeps: (number | undefined)[] = [];
    const sleeper: StepRunner = async (step, ctx) => {
      sleeps.push(ctx.sleepMs);
      return { sleptMs: (step.params as { durationMs: number }).durationMs };
    };
    // First owner, clock at 1 000 000: the timer (wake at 1 060 000) is journalled before the runner is called.
    const first = await openFresh(journalEnv(store), payload(dag));
    let wakeUp = (): void => undefined;
    let asleep = (): void => undefined;
    const sleeping = new Promise<void>((ok) => {
      asleep = ok;
    });
    const firstRun = new Execution(
      {
        ...executor(async (step, ctx) => {
          expect((await types(store)).at(-1)).toBe("exec.timer-started");
          asleep();
          await new Promise<void>((ok) => {
            wakeUp = ok;
          });
          return sleeper(step, ctx);
        }),
        clock: { now: () => new Date(1_000_000) },
      },
      first,
      dag,
      0,
    );
    const outcome = firstRun.run();
    await sleeping;
    // Recovery fences it mid-sleep; when its timer fires, its step-completed is refused.
    await store.append(
      first.exec.ref,
      first.emit(
        "exec.paused-for-recovery",
        eventData("exec.paused-for-recovery", {
          forensicsId: `runtime-recovery:${first.executionId}:r1:l1`,
          incidentId: "i1",
          failedRuntimeInstanceId: "rt-a",
          newEpoch: 1,
        }),
      ),
      { expectedSeq: await store.lastSeq(first.exec.ref), msgId: "recovery" },
    );
    wakeUp();
    expect(await outcome).toMatchObject({ state: "failed", reason: "execution-ownership-lost" });
    const timers = (await store.read(first.exec.ref)).events
      .filter((e) => e.event.type === "exec.timer-started")
      .map((e) => e.event.data);
    expect(timers).toEqual([
      { stepId: "nap", attempt: 1, durationMs: 60_000, wakeAt: new Date(1_060_000).toISOString() },
    ]);
    // The replacement resumes 45 s later: 15 s are left.
    const resumed = await openResume(journalEnv(store, "rt-b"), {
      ...payload(dag, "l2"),
      executionId: first.executionId,
      epoch: 1,
      dispatchedSeq: await store.lastSeq(runRef(T, "r1")),
    });
    sleeps.length = 0;
    expect(
      await new Execution({ ...executor(sleeper), clock: { now: () => new Date(1_045_000) } }, resumed, dag, 0).run(),
    ).toEqual({ state: "completed" });
    expect(sleeps).toEqual([15_000]);
    expect((await store.read(first.exec.ref)).events.filter((e) => e.event.type === "exec.timer-started")).toHaveLength(
      1,
    );
  });

  it("a sleeping step holds no worker: with one worker, another run's steps and the same run's other branch complete while it waits on its timer", async () => {
    const store = new MemoryEventStore();
    const pool = new WorkerPool(1);
    const napping = DagDefinition.parse({
      steps: [
        { id: "nap", kind: "sleep", params: { durationMs: 60_000 } },
        { id: "side", kind: "compute" },
        { id: "after", kind: "compute", dependsOn: ["nap"] },
      ],
    } satisfies DagInput);
    let wakeUp = (): void => undefined;
    let asleep = (): void => undefined;
    const sleeping = new Promise<void>((ok) => {
      asleep = ok;
    });
    const order: string[] = [];
    const runner: StepRunner = async (step) => {
      if (step.kind === "sleep") {
        asleep();
        await new Promise<void>((ok) => {
          wakeUp = ok;
        });
      }
      order.push(step.id);
      return { ok: step.id };
    };
    const a = new Execution(executor(runner, pool), await openFresh(journalEnv(store), payload(napping)), napping, 0);
    const outcomeA = a.run();
    await sleeping;
    for (let i = 0; i < 100 && !order.includes("side"); i++) await new Promise((ok) => setTimeout(ok, 5));
    await new Promise((ok) => setTimeout(ok, 5));
    expect(pool.activeWorkers).toBe(0);
    // A second run on the same (single-worker) runtime completes meanwhile.
    const other = { ...payload(chain(3), "l2"), sharedRunId: "r2" } as Parameters<typeof openFresh>[1];
    const b = new Execution(executor(runner, pool), await openFresh(journalEnv(store), other), chain(3), 0);
    expect(await b.run()).toEqual({ state: "completed" });
    // Everything but the sleeping branch ran on the one worker while the timer was pending.
    expect([...order].sort()).toEqual(["s1", "s2", "s3", "side"]);
    wakeUp();
    expect(await outcomeA).toEqual({ state: "completed" });
    expect(order.slice(-2)).toEqual(["nap", "after"]);
    expect(pool.activeWorkers).toBe(0);
  });

  it("a retry back-off holds no worker: with one worker, another run completes while a failed step waits for its retry time", async () => {
    const store = new MemoryEventStore();
    const pool = new WorkerPool(1);
    const failing = DagDefinition.parse({
      steps: [{ id: "f", kind: "compute", retry: { maxAttempts: 2, backoffMs: 400 } }],
    } satisfies DagInput);
    const done: string[] = [];
    const runner: StepRunner = async (step, ctx) => {
      if (step.id === "f" && ctx.attempt === 1) throw new Error("first attempt fails");
      done.push(`${step.id}#${ctx.attempt}`);
      return { ok: step.id };
    };
    // A real clock: the back-off is a real wait here.
    const env = { ...executor(runner, pool), clock: { now: () => new Date() } };
    const outcomeA = new Execution(env, await openFresh(journalEnv(store), payload(failing)), failing, 0).run();
    const ref = execRef(T, eid("r1", "l1"));
    for (let i = 0; i < 100 && !(await types(store, ref)).includes("exec.step-failed"); i++)
      await new Promise((ok) => setTimeout(ok, 5));
    expect(pool.activeWorkers).toBe(0);
    const other = { ...payload(chain(2), "l2"), sharedRunId: "r2" } as Parameters<typeof openFresh>[1];
    expect(await new Execution(env, await openFresh(journalEnv(store), other), chain(2), 0).run()).toEqual({
      state: "completed",
    });
    expect(await outcomeA).toEqual({ state: "completed" });
    expect(done).toEqual(["s1#1", "s2#1", "f#2"]);
  });

  it("a foreign append mid-run stops the execution with execution-ownership-lost: no further append, the worker is released", async () => {
    const store = new MemoryEventStore();
    const workers = new WorkerPool(1);
    const holder: { opened?: Awaited<ReturnType<typeof openFresh>> } = {};
    const { runner } = recordingRunner(async (step) => {
      const opened = holder.opened;
      if (step.id === "s2" && opened) {
        await store.append(
          opened.exec.ref,
          opened.emit(
            "exec.paused-for-recovery",
            eventData("exec.paused-for-recovery", {
              forensicsId: `runtime-recovery:${eid("r1", "l1")}:r1:l1`,
              incidentId: "i1",
              failedRuntimeInstanceId: "rt-a",
              newEpoch: 1,
            }),
          ),
          { expectedSeq: await store.lastSeq(opened.exec.ref), msgId: "recovery" },
        );
      }
    });
    const opened = await openFresh(journalEnv(store), payload(chain(4)));
    holder.opened = opened;
    const outcome = await new Execution(executor(runner, workers), opened, chain(4), 0).run();
    expect(outcome).toMatchObject({ state: "failed", reason: "execution-ownership-lost" });
    expect(await types(store)).toEqual(["exec.started", "exec.step-completed", "exec.paused-for-recovery"]);
    expect(store.appendLog.filter((a) => a.outcome === "conflict")).toHaveLength(1);
    expect(workers.availableWorkers).toBe(1);
    expect(await types(store, runRef(T, "r1"))).toEqual(["run.started"]);
  });

  it("a run whose dispatched sequence is stale is not started: run started conflicts and the execution journal stays empty", async () => {
    const store = new MemoryEventStore();
    const env = journalEnv(store);
    const other = await openFresh(env, payload(chain(1), "l0"));
    expect(other.run.lastSeq).toBeGreaterThan(0);
    await expect(openFresh(env, payload(chain(1)))).rejects.toMatchObject({ code: "execution-ownership-lost" });
    expect(await types(store)).toEqual([]);
  });
});

describe("checkDispatched: run started only for this runtime's own dispatch (in-memory store; proves no transport)", () => {
  const ctx: EventOrigin = {
    tenantId: TenantId.parse(T),
    correlationId: "c1",
    causationId: "admission",
    writer: { service: "admission", instanceId: "adm-1" },
  };
  async function dispatched(store: MemoryEventStore, data: Record<string, unknown>): Promise<number> {
    const ref = runRef(T, "r1");
    const e = buildEvent(
      "run.dispatched",
      eventData("run.dispatched", { transport: "http", hostIncarnation: "pid:1:1", ...data }),
      ctx,
      {
        eventId: `ev-${++ids}`,
        now: new Date(0),
      },
    );
    return (await store.append(ref, e, { expectedSeq: await store.lastSeq(ref) })).seq;
  }

  it("given the run's dispatched event for this LocalRunId on this runtime, when checked, then it passes and writes nothing", async () => {
    const store = new MemoryEventStore();
    const seq = await dispatched(store, { runtimeInstanceId: "rt-a", localRunId: "l1" });
    await expect(
      checkDispatched(journalEnv(store), { ...payload(chain(1)), dispatchedSeq: seq }),
    ).resolves.toBeUndefined();
    expect(store.events).toHaveLength(1);
  });

  it("given a sequence naming another LocalRunId, another runtime, no event or a resume dispatch, when a fresh start is checked, then contract-violation names what the log holds", async () => {
    const store = new MemoryEventStore();
    const other = await dispatched(store, { runtimeInstanceId: "rt-a", localRunId: "l0" });
    const elsewhere = await dispatched(store, { runtimeInstanceId: "rt-b", localRunId: "l1" });
    const resume = await dispatched(store, {
      runtimeInstanceId: "rt-a",
      localRunId: "l1",
      resumeExecutionId: eid("r1", "l0"),
    });
    const check = (dispatchedSeq: number) =>
      checkDispatched(journalEnv(store), { ...payload(chain(1)), dispatchedSeq });
    await expect(check(other)).rejects.toMatchObject({
      code: "contract-violation",
      message: expect.stringContaining("dispatched LocalRunId l0, not l1"),
    });
    await expect(check(elsewhere)).rejects.toMatchObject({
      code: "contract-violation",
      message: expect.stringContaining("to rt-b, not to rt-a"),
    });
    await expect(check(resume + 1)).rejects.toMatchObject({
      code: "contract-violation",
      message: expect.stringContaining("no event of this run"),
    });
    await expect(check(resume)).rejects.toMatchObject({
      code: "contract-violation",
      message: expect.stringContaining("not a fresh start"),
    });
    expect(store.events).toHaveLength(3);
  });

  it("given a resume dispatch, when checked as a resume of another execution, then it is refused", async () => {
    const store = new MemoryEventStore();
    const seq = await dispatched(store, {
      runtimeInstanceId: "rt-a",
      localRunId: "l1",
      resumeExecutionId: eid("r1", "l0"),
    });
    await expect(
      checkDispatched(journalEnv(store), { ...payload(chain(1)), dispatchedSeq: seq }, eid("r1", "l0")),
    ).resolves.toBeUndefined();
    await expect(
      checkDispatched(journalEnv(store), { ...payload(chain(1)), dispatchedSeq: seq }, eid("r1", "l9")),
    ).rejects.toMatchObject({ code: "contract-violation" });
  });
});
