import { describe, expect, it } from "vitest";
import { DagDefinition, type DagInput, type DroverEvent } from "../../../contracts/index.ts";
import type { AggregateRef } from "../../../streams/subjects.ts";
import type { AppendOptions, Appended } from "../../../streams/types.ts";
import { MemoryEventStore } from "../../../test/support/memory-event-store.ts";
import { appendRecoveryPause } from "../../../test/support/recovery-pause.ts";
import { Execution } from "./execution.ts";
import { openFresh } from "./execution-open.ts";
import { executor, journalEnv, payload, recordingRunner, types } from "./execution-fixtures.ts";
import { WorkerPool } from "./worker-pool.ts";

/** A memory store that holds the `step-completed` append of `stepId` until `release()` (proves no transport). */
class HeldStore extends MemoryEventStore {
  private open: (() => void) | undefined;
  private readonly gate = new Promise<void>((ok) => (this.open = ok));
  held = false;
  constructor(private readonly stepId: string) {
    super();
  }
  release(): void {
    this.open?.();
  }
  override async append(ref: AggregateRef, event: DroverEvent, opts: AppendOptions): Promise<Appended> {
    if (event.type === "exec.step-completed" && event.data.stepId === this.stepId) {
      this.held = true;
      await this.gate;
    }
    return super.append(ref, event, opts);
  }
}

const dagOf = (second: DagInput["steps"][number]) =>
  DagDefinition.parse({ steps: [{ id: "s1", kind: "compute" }, second] } satisfies DagInput);
const until = async (what: () => boolean) => {
  for (let i = 0; i < 200 && !what(); i++) await new Promise((r) => setTimeout(r, 1));
};

// Unit tier with an in-memory event store: proves the executor's ordering, NOT any transport.
describe("Execution: pure steps pipelined with their dependencies' appends (in-memory store; proves no transport)", () => {
  it("a compute step starts while its dependency's step-completed is being appended, and is journaled after it", async () => {
    const store = new HeldStore("s1");
    const dag = dagOf({ id: "s2", kind: "compute", dependsOn: ["s1"] });
    const { runner, calls } = recordingRunner();
    const opened = await openFresh(journalEnv(store), payload(dag));
    const outcome = new Execution(executor(runner), opened, dag, 0).run();
    await until(() => calls.length === 2);
    expect(store.held).toBe(true);
    expect(calls).toEqual(["s1#1", "s2#1"]);
    // s2's outcome waits for s1's: nothing of it is stored while s1's append is held.
    expect(await types(store)).toEqual(["exec.started"]);
    store.release();
    expect(await outcome).toEqual({ state: "completed" });
    const steps = (await store.read(opened.exec.ref)).events.map((e) => e.event as DroverEvent);
    expect(steps.map((e) => [e.type, e.type === "exec.step-completed" ? e.data.stepId : ""])).toEqual([
      ["exec.started", ""],
      ["exec.step-completed", "s1"],
      ["exec.step-completed", "s2"],
      ["exec.completed", ""],
    ]);
  });

  it("a step with effects outside the journal (http) waits until its dependency's completion is durable", async () => {
    const store = new HeldStore("s1");
    const dag = dagOf({ id: "s2", kind: "http", dependsOn: ["s1"], params: { url: "http://example.test/" } });
    const { runner, calls } = recordingRunner();
    const opened = await openFresh(journalEnv(store), payload(dag));
    const outcome = new Execution(executor(runner), opened, dag, 0).run();
    await until(() => store.held);
    await new Promise((r) => setTimeout(r, 20));
    expect(calls).toEqual(["s1#1"]);
    store.release();
    expect(await outcome).toEqual({ state: "completed" });
    expect(calls).toEqual(["s1#1", "s2#1"]);
  });

  it("when the dependency's append is refused (another writer), the pipelined step's result is dropped: execution-ownership-lost, nothing of it journaled, the worker given back", async () => {
    const store = new HeldStore("s1");
    const workers = new WorkerPool(1);
    const dag = dagOf({ id: "s2", kind: "compute", dependsOn: ["s1"] });
    const { runner, calls } = recordingRunner();
    const opened = await openFresh(journalEnv(store), payload(dag));
    const outcome = new Execution(executor(runner, workers), opened, dag, 0).run();
    await until(() => calls.length === 2);
    await appendRecoveryPause(store, opened, opened.exec.lastSeq);
    store.release();
    expect(await outcome).toMatchObject({ state: "failed", reason: "execution-ownership-lost" });
    expect(await types(store)).toEqual(["exec.started", "exec.paused-for-recovery"]);
    expect(store.appendLog.filter((a) => a.outcome === "conflict")).toHaveLength(1);
    expect(workers.availableWorkers).toBe(1);
  });
});
