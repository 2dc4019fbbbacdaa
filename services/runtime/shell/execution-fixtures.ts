/**
 * The runtime executor's unit-test kit (in-memory event store; proves no transport): a journal
 * environment, DAGs, dispatch payloads, a recording step runner and an executor.
 */
import {
  DagDefinition,
  HostIncarnation,
  LocalRunId,
  RuntimeInstanceId,
  SharedRunId,
  type DagInput,
  type Step,
} from "../../../contracts/index.ts";
import { execRef, type EventStore } from "../../../streams/index.ts";
import { executionIdFor, type JournalEnv, type openFresh } from "./execution-open.ts";
import type { StepRunner } from "./step-runners.ts";
import { WorkerPool } from "./worker-pool.ts";

export const T = "t1";
let ids = 0;
/** A fresh event id for the tests' own appends (unique across the module, as the journal's are). */
export const nextEventId = () => `ev-${++ids}`;
export const journalEnv = (store: EventStore, runtimeInstanceId = "rt-a"): JournalEnv => ({
  store,
  runtimeInstanceId: RuntimeInstanceId.parse(runtimeInstanceId),
  hostIncarnation: HostIncarnation.parse("pid:1:1"),
  clock: { now: () => new Date(1_000_000) },
  newEventId: nextEventId,
  sleep: async () => undefined,
});
export const chain = (n: number): DagDefinition =>
  DagDefinition.parse({
    steps: Array.from({ length: n }, (_, i) => ({ id: `s${i + 1}`, kind: "compute", dependsOn: i ? [`s${i}`] : [] })),
  } satisfies DagInput);
export const payload = (dag: DagDefinition, localRunId = "l1") =>
  ({ sharedRunId: "r1", localRunId, tenantId: T, dag, dispatchedSeq: 0, correlationId: "c1" }) as Parameters<
    typeof openFresh
  >[1];

export function recordingRunner(onStep?: (step: Step, attempt: number) => Promise<void> | void): {
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
export const executor = (runner: StepRunner, workers = new WorkerPool(2)) => ({
  workers,
  maxWorkersPerRun: 1,
  runStep: runner,
  clock: { now: () => new Date(1_000_000) },
  log: () => undefined,
});
export const eid = (run: string, local: string) => executionIdFor(SharedRunId.parse(run), LocalRunId.parse(local));
export const types = (store: EventStore, ref = execRef(T, eid("r1", "l1"))) =>
  store.read(ref).then((h) => h.events.map((e) => e.event.type));
