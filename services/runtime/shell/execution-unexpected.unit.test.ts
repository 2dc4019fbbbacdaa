import { describe, expect, it } from "vitest";
import {
  DagDefinition,
  DroverError,
  HostIncarnation,
  RuntimeInstanceId,
  type DagInput,
} from "../../../contracts/index.ts";
import { execRef, runRef } from "../../../streams/subjects.ts";
import { MemoryEventStore } from "../../../test/support/memory-event-store.ts";
import { Execution } from "./execution.ts";
import { openFresh, type JournalEnv } from "./execution-open.ts";
import { WorkerPool } from "./worker-pool.ts";

// Unit tier with an in-memory event store: proves what the executor journals when an error no step
// owns stops it, NOT any transport or JetStream behaviour.
const T = "t1";
let ids = 0;
const env = (store: MemoryEventStore): JournalEnv => ({
  store,
  runtimeInstanceId: RuntimeInstanceId.parse("rt-a"),
  hostIncarnation: HostIncarnation.parse("pid:1:1"),
  clock: { now: () => new Date(1_000_000) },
  newEventId: () => `ev-${++ids}`,
  sleep: async () => undefined,
});

describe("an execution stopped by an error no step owns (in-memory store; proves no transport)", () => {
  it("a map whose fan-in output the output store refuses ends exec.failed and run.failed with the store's code, not `started` for ever", async () => {
    const store = new MemoryEventStore();
    const dag = DagDefinition.parse({
      steps: [{ id: "each", kind: "compute", map: { over: "input.items", maxConcurrency: 4 } }],
    } satisfies DagInput);
    const opened = await openFresh(env(store), {
      sharedRunId: "r1",
      localRunId: "l1",
      tenantId: T,
      dag,
      dispatchedSeq: 0,
      correlationId: "c1",
    } as Parameters<typeof openFresh>[1]);
    const logs: Record<string, unknown>[] = [];
    const refusing = {
      put: async () => {
        throw new DroverError("output-store-unavailable", "the outputs stream is gone");
      },
      get: async () => {
        throw new DroverError("output-store-unavailable", "the outputs stream is gone");
      },
    };
    const execution = new Execution(
      {
        workers: new WorkerPool(4),
        maxWorkersPerRun: 4,
        // Each item's output is ~60 bytes: 300 of them pass the 8 KiB inline limit at the fan-in.
        runStep: async (step) => ({ step: step.id, pad: "x".repeat(40) }),
        clock: { now: () => new Date(1_000_000) },
        log: (l) => logs.push(l),
        outputs: refusing,
      },
      opened,
      dag,
      0,
      { items: Array.from({ length: 300 }, (_, i) => i) },
    );
    expect(await execution.run()).toMatchObject({ state: "failed", reason: "output-store-unavailable" });
    const exec = (await store.read(execRef(T, opened.executionId))).events.map((e) => e.event);
    expect(exec.filter((e) => e.type === "exec.step-completed")).toHaveLength(300);
    expect(exec.at(-1)).toMatchObject({ type: "exec.failed", data: { reason: { code: "output-store-unavailable" } } });
    const run = (await store.read(runRef(T, "r1"))).events.map((e) => e.event);
    expect(run.at(-1)).toMatchObject({ type: "run.failed", data: { reason: { code: "output-store-unavailable" } } });
    expect(logs.some((l) => l.event === "execution-failed-unexpectedly")).toBe(true);
  });
});
