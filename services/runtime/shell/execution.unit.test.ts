import { describe, expect, it } from "vitest";
import { DagDefinition, type DagInput, type DroverEvent } from "../../../contracts/index.ts";
import { execRef, runRef } from "../../../streams/subjects.ts";
import { eventData } from "../../../test/support/event-data.ts";
import { MemoryEventStore } from "../../../test/support/memory-event-store.ts";
import { appendRecoveryPause } from "../../../test/support/recovery-pause.ts";
import { Execution } from "./execution.ts";
import { openFresh, openResume } from "./execution-open.ts";
import type { StepRunner } from "./step-runners.ts";
import { WorkerPool } from "./worker-pool.ts";
import { chain, eid, executor, journalEnv, payload, recordingRunner, T, types } from "./execution-fixtures.ts";

// Unit tier with an in-memory event store: proves the executor's decisions and fencing reactions,
// NOT any transport or JetStream behaviour (the host tier proves those against real processes).
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
    await appendRecoveryPause(store, first, first.exec.lastSeq);
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
    await appendRecoveryPause(store, first, await store.lastSeq(first.exec.ref));
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
        await appendRecoveryPause(store, opened, await store.lastSeq(opened.exec.ref));
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
