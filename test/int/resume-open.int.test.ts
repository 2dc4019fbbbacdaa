import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import {
  buildEvent,
  DagDefinition,
  HostIncarnation,
  RuntimeInstanceId,
  TenantId,
  type DroverEvent,
  type EventOrigin,
  type EventType,
} from "../../contracts/index.ts";
import { checkResume, openFresh, openResume, type JournalEnv } from "../../services/runtime/index.ts";
import { createEventStore } from "../../streams/event-store.ts";
import { runRef } from "../../streams/subjects.ts";
import type { EventStore } from "../../streams/types.ts";
import { eventData } from "../support/event-data.ts";
import { freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * A resume's open on a real nats-server, with the journal as the command checked it and no read
 * before its appends: JetStream's expected-sequence conditions of run `started` (the dispatch's
 * sequence) and exec `resumed` (the checked sequence) are what refuse a resume whose journal moved.
 */
const T = "t1";
let ids = 0;
const nextEventId = () => `ev-${process.pid}-${++ids}`;
const journalEnv = (store: EventStore, runtimeInstanceId = "rt-a"): JournalEnv => ({
  store,
  runtimeInstanceId: RuntimeInstanceId.parse(runtimeInstanceId),
  hostIncarnation: HostIncarnation.parse("pid:1:1"),
  clock: { now: () => new Date(1_000_000) },
  newEventId: nextEventId,
  sleep: async () => undefined,
});
const dag = DagDefinition.parse({
  steps: [
    { id: "s1", kind: "compute", dependsOn: [] },
    { id: "s2", kind: "compute", dependsOn: ["s1"] },
  ],
});
const payload = (localRunId: string) =>
  ({ sharedRunId: "r1", localRunId, tenantId: T, dag, dispatchedSeq: 0, correlationId: "c1" }) as Parameters<
    typeof openFresh
  >[1];
const recovery: EventOrigin = {
  tenantId: TenantId.parse(T),
  correlationId: "c1",
  causationId: "recovery",
  writer: { service: "recovery", instanceId: "rec-1" },
};
const byRecovery = <E extends EventType>(type: E, data: Record<string, unknown>) =>
  buildEvent(type, eventData(type, data), recovery, { eventId: nextEventId(), now: new Date(0) }) as DroverEvent;
const pause = (newEpoch: number, failed: string) =>
  byRecovery("exec.paused-for-recovery", {
    forensicsId: `runtime-recovery:x:r1:${newEpoch}`,
    incidentId: `i${newEpoch}`,
    failedRuntimeInstanceId: failed,
    newEpoch,
  });

describe("openResume on a real nats-server: the checked journal fences a moved journal by conditional appends", () => {
  let fx: StreamsFixture;
  let store: EventStore;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "ro");
    store = createEventStore(fx.nc, fx.layout);
  });
  afterEach(async () => {
    await fx.close();
  });

  /** rt-a ran the execution and died; recovery paused it at epoch 1 and admission dispatched its resume (l2) to rt-b. */
  async function pausedAndDispatched() {
    const first = await openFresh(journalEnv(store), payload("l1"));
    await store.append(first.exec.ref, pause(1, "rt-a"), { expectedSeq: first.exec.lastSeq });
    const run = runRef(T, "r1");
    const dispatched = byRecovery("run.dispatched", {
      runtimeInstanceId: "rt-b",
      localRunId: "l2",
      transport: "http",
      hostIncarnation: "pid:2:2",
      resumeExecutionId: first.executionId,
    });
    const dispatchedSeq = (await store.append(run, dispatched, { expectedSeq: await store.lastSeq(run) })).seq;
    const p = { ...payload("l2"), executionId: first.executionId, epoch: 1, dispatchedSeq };
    return { p, checked: await checkResume(journalEnv(store, "rt-b"), p), exec: first.exec.ref, run };
  }

  const streamLast = async () => (await fx.jsm.streams.info(fx.layout.eventStream)).state.last_seq;

  it("given nothing appended since the check, when opened, then run started and exec resumed are stored after the checked sequences", async () => {
    const { p, checked, exec } = await pausedAndDispatched();
    const opened = await openResume(journalEnv(store, "rt-b"), p, checked);
    const journal = (await store.read(exec)).events;
    expect(journal.at(-1)).toMatchObject({ seq: opened.exec.lastSeq, event: { type: "exec.resumed" } });
    expect(journal.at(-2)?.seq).toBe(checked.lastSeq);
  });

  it("given recovery paused the journal again with the run's requeue in one atomic batch after the check, when opened, then JetStream refuses run started on the dispatch's sequence: execution-ownership-lost and nothing is stored", async () => {
    const { p, checked, exec, run } = await pausedAndDispatched();
    const requeued = byRecovery("run.requeued-for-resume", {
      forensicsId: "runtime-recovery:x:r1:2",
      incidentId: "i2",
      executionId: p.executionId,
      failedRuntimeInstanceId: "rt-b",
      failedLocalRunId: "l2",
      newEpoch: 2,
    });
    await store.appendAtomic([
      { ref: exec, events: [pause(2, "rt-b")], expectedSeq: await store.lastSeq(exec) },
      { ref: run, events: [requeued], expectedSeq: await store.lastSeq(run) },
    ]);
    const before = await streamLast();
    await expect(openResume(journalEnv(store, "rt-b"), p, checked)).rejects.toMatchObject({
      code: "execution-ownership-lost",
    });
    expect(await streamLast()).toBe(before);
  });

  it("given a journal event after the check that the run does not show, when opened, then JetStream refuses exec resumed on the checked sequence: execution-ownership-lost and no resumed is stored", async () => {
    const { p, checked, exec } = await pausedAndDispatched();
    await store.append(exec, pause(2, "rt-b"), { expectedSeq: checked.lastSeq });
    await expect(openResume(journalEnv(store, "rt-b"), p, checked)).rejects.toMatchObject({
      code: "execution-ownership-lost",
    });
    const types = (await store.read(exec)).events.map((e) => e.event.type);
    expect(types).not.toContain("exec.resumed");
  });
});
