import { describe, expect, it } from "vitest";
import {
  buildEvent,
  HostIncarnation,
  TenantId,
  type DroverEvent,
  type EventOrigin,
  type EventType,
} from "../../../contracts/index.ts";
import { execRef, runRef } from "../../../streams/subjects.ts";
import type { EventStore } from "../../../streams/types.ts";
import { eventData } from "../../../test/support/event-data.ts";
import { MemoryEventStore } from "../../../test/support/memory-event-store.ts";
import { checkResume, openFresh, openResume } from "./execution-open.ts";
import { chain, executor, journalEnv, nextEventId, payload, recordingRunner, T, types } from "./execution-fixtures.ts";
import { RuntimeInstance } from "./runtime-instance.ts";

// Unit tier with an in-memory event store: proves the resume path's decisions and which reads it
// makes, NOT any transport or JetStream behaviour (test/host proves a real runtime's resumes).
const dag = chain(2);
const recovery: EventOrigin = {
  tenantId: TenantId.parse(T),
  correlationId: "c1",
  causationId: "recovery",
  writer: { service: "recovery", instanceId: "rec-1" },
};
const byRecovery = <E extends EventType>(type: E, data: Record<string, unknown>) =>
  buildEvent(type, eventData(type, data), recovery, { eventId: nextEventId(), now: new Date(0) }) as DroverEvent;
const pause = (newEpoch: number) =>
  byRecovery("exec.paused-for-recovery", {
    forensicsId: `runtime-recovery:x:r1:l1`,
    incidentId: `i${newEpoch}`,
    failedRuntimeInstanceId: "rt-a",
    newEpoch,
  });

/** rt-a ran s1 and died; recovery paused the journal at epoch 1 and admission dispatched its resume (l2) to rt-b. */
async function pausedAndDispatched(store: MemoryEventStore) {
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
  await store.append(first.exec.ref, pause(1), { expectedSeq: first.exec.lastSeq });
  const run = runRef(T, "r1");
  const dispatched = byRecovery("run.dispatched", {
    runtimeInstanceId: "rt-b",
    localRunId: "l2",
    transport: "http",
    hostIncarnation: "pid:2:2",
    resumeExecutionId: first.executionId,
  });
  const dispatchedSeq = (await store.append(run, dispatched, { expectedSeq: await store.lastSeq(run) })).seq;
  return { ...payload(dag, "l2"), executionId: first.executionId, epoch: 1, dispatchedSeq };
}

/** `store` with every call of `name` counted (and, with `slow`, answered on a later macrotask). */
function counting(
  store: MemoryEventStore,
  order: string[] = [],
  slow = false,
): EventStore & { reads: () => number; lastSeqs: () => number } {
  let reads = 0;
  let lastSeqs = 0;
  const wrap =
    <A extends unknown[], R>(name: string, f: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      order.push(`${name}:start`);
      if (slow) await new Promise((r) => setTimeout(r, 5));
      const out = await f(...a);
      order.push(`${name}:end`);
      return out;
    };
  return Object.assign(Object.create(store) as MemoryEventStore, {
    read: wrap("read", (...a: Parameters<MemoryEventStore["read"]>) => (reads++, store.read(...a))),
    lastOfType: wrap("lastOfType", (...a: Parameters<MemoryEventStore["lastOfType"]>) => store.lastOfType(...a)),
    lastSeq: wrap("lastSeq", (...a: Parameters<MemoryEventStore["lastSeq"]>) => (lastSeqs++, store.lastSeq(...a))),
    reads: () => reads,
    lastSeqs: () => lastSeqs,
  });
}

describe("ResumeExecution's checks side by side, the checked journal reused by the open (in-memory store; proves no transport)", () => {
  it("given a resume command, when checked, then the journal's history read and the run's dispatch get are both in flight before either answers", async () => {
    const store = new MemoryEventStore();
    const p = await pausedAndDispatched(store);
    const order: string[] = [];
    const state = await checkResume(journalEnv(counting(store, order, true), "rt-b"), p);
    expect(state.pendingRecovery?.newEpoch).toBe(1);
    expect(order.slice(0, 2).sort()).toEqual(["lastOfType:start", "read:start"]);
  });

  it("given both checks refuse (wrong epoch and a dispatch to another runtime), when checked, then the journal's refusal is reported, as when they ran one after the other", async () => {
    const store = new MemoryEventStore();
    const p = await pausedAndDispatched(store);
    await expect(checkResume(journalEnv(store, "rt-c"), { ...p, epoch: 2 })).rejects.toMatchObject({
      code: "resume-epoch-mismatch",
    });
    await expect(checkResume(journalEnv(store, "rt-c"), p)).rejects.toMatchObject({
      code: "contract-violation",
      message: expect.stringContaining("to rt-b, not to rt-c"),
    });
    expect(store.events).toHaveLength(5);
  });

  it("given the journal checked by the command, when opened, then neither its history nor its last sequence is read again and exec resumed follows the checked sequence", async () => {
    const store = new MemoryEventStore();
    const p = await pausedAndDispatched(store);
    const checked = await checkResume(journalEnv(store, "rt-b"), p);
    const reads = counting(store);
    const opened = await openResume(journalEnv(reads, "rt-b"), p, checked);
    expect([reads.reads(), reads.lastSeqs()]).toEqual([0, 0]);
    expect(opened.exec.lastSeq).toBeGreaterThan(checked.lastSeq);
    expect((await types(store, opened.exec.ref)).at(-1)).toBe("exec.resumed");
  });

  it("given recovery paused the journal again (epoch 2, with the run's requeue in one atomic batch) after the command's check, when opened with that check, then run started's dispatchedSeq condition refuses it: execution-ownership-lost and nothing is written", async () => {
    const store = new MemoryEventStore();
    const p = await pausedAndDispatched(store);
    const checked = await checkResume(journalEnv(store, "rt-b"), p);
    const ref = execRef(T, p.executionId);
    const run = runRef(T, "r1");
    const requeued = byRecovery("run.requeued-for-resume", {
      forensicsId: "runtime-recovery:x:r1:l2",
      incidentId: "i2",
      executionId: p.executionId,
      failedRuntimeInstanceId: "rt-b",
      failedLocalRunId: "l2",
      newEpoch: 2,
    });
    await store.appendAtomic([
      { ref, events: [pause(2)], expectedSeq: await store.lastSeq(ref) },
      { ref: run, events: [requeued], expectedSeq: await store.lastSeq(run) },
    ]);
    const before = store.events.length;
    await expect(openResume(journalEnv(store, "rt-b"), p, checked)).rejects.toMatchObject({
      code: "execution-ownership-lost",
    });
    expect(store.events).toHaveLength(before);
  });

  it("given an event in the journal after the command's check that the run does not show (a writer the check did not see, or a lagging replica's read), when opened with that check, then exec resumed's condition refuses it: execution-ownership-lost and no resumed of this runtime is stored", async () => {
    const store = new MemoryEventStore();
    const p = await pausedAndDispatched(store);
    const checked = await checkResume(journalEnv(store, "rt-b"), p);
    const ref = execRef(T, p.executionId);
    await store.append(ref, pause(2), { expectedSeq: await store.lastSeq(ref) });
    await expect(openResume(journalEnv(store, "rt-b"), p, checked)).rejects.toMatchObject({
      code: "execution-ownership-lost",
    });
    expect(await types(store, ref)).not.toContain("exec.resumed");
  });

  it("given a ResumeExecution accepted by a runtime with a free slot, when its execution opens and completes, then the journal's history was read once for the check and the open together", async () => {
    const store = new MemoryEventStore();
    const p = await pausedAndDispatched(store);
    const reads = counting(store);
    const { runner, calls } = recordingRunner();
    const sizing = { workers: 1, maxConcurrentRuns: 1, localQueueCapacity: 1, maxWorkersPerRun: 1 };
    const instance = new RuntimeInstance(
      sizing,
      journalEnv(reads, "rt-b"),
      executor(runner),
      HostIncarnation.parse("pid:2:2"),
    );
    await instance.resume(p);
    await instance.whenIdle();
    expect(instance.status(p.localRunId)).toMatchObject({ state: "completed" });
    expect(calls).toEqual(["s2#1"]);
    expect(reads.reads()).toBe(1);
  });
});

/**
 * rt-b (one run slot, two queue places) got a resume (l2, the pausedAndDispatched journal) and a new
 * run r2 (l3) placed beside it; the resume's journal read is held open until `release`, while the new
 * run's one dispatch get answers at once (as on a fresh replacement, where the resume's check is the slower).
 */
async function resumeBesideNewRun() {
  const store = new MemoryEventStore();
  const p = await pausedAndDispatched(store);
  const run2 = runRef(T, "r2");
  const d2 = byRecovery("run.dispatched", {
    runtimeInstanceId: "rt-b",
    localRunId: "l3",
    transport: "http",
    hostIncarnation: "pid:2:2",
  });
  const fresh = {
    ...payload(dag, "l3"),
    sharedRunId: "r2",
    dispatchedSeq: (await store.append(run2, d2, { expectedSeq: 0 })).seq,
  } as typeof p;
  let release = () => {};
  const gate = new Promise<void>((ok) => (release = ok));
  const slowRead = Object.assign(Object.create(store) as MemoryEventStore, {
    read: async (...a: Parameters<MemoryEventStore["read"]>) => (await gate, store.read(...a)),
  });
  const { runner, calls } = recordingRunner(() => new Promise<void>(() => undefined)); // steps never end: who started first stays visible
  const sizing = { workers: 2, maxConcurrentRuns: 1, localQueueCapacity: 2, maxWorkersPerRun: 1 };
  const instance = new RuntimeInstance(
    sizing,
    journalEnv(slowRead, "rt-b"),
    executor(runner),
    HostIncarnation.parse("pid:2:2"),
  );
  return { p, fresh, release, calls, instance };
}

describe("a resume being checked holds its slot from a new run accepted meanwhile (in-memory store; proves no transport)", () => {
  it("given a resume whose journal is still being read and a new run accepted meanwhile on the only slot, when the check ends, then the resume starts first and the new run waits in the queue", async () => {
    const { p, fresh, release, calls, instance } = await resumeBesideNewRun();
    const resumed = instance.resume(p);
    await instance.dispatch(fresh);
    expect(instance.status(fresh.localRunId).state).toBe("queued");
    release();
    await resumed;
    await new Promise((r) => setTimeout(r, 20));
    expect(instance.status(p.localRunId).state).toBe("running");
    expect(instance.status(fresh.localRunId).state).toBe("queued");
    expect(calls).toEqual(["s2#1"]);
  });

  it("given a resume refused by its check (another epoch) while a new run waited for its slot, when refused, then the new run starts at once", async () => {
    const { p, fresh, release, calls, instance } = await resumeBesideNewRun();
    const refused = instance.resume({ ...p, epoch: 2 });
    await instance.dispatch(fresh);
    release();
    await expect(refused).rejects.toMatchObject({ code: "resume-epoch-mismatch" });
    await new Promise((r) => setTimeout(r, 20));
    expect(instance.status(fresh.localRunId).state).toBe("running");
    expect(calls).toEqual(["s1#1"]);
  });
});
