import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { isDroverError } from "../../contracts/index.ts";
import { createEventStore } from "../../streams/event-store.ts";
import { execRef, runRef } from "../../streams/subjects.ts";
import type { EventStore } from "../../streams/types.ts";
import { ids } from "../support/example-events.ts";
import { event, freshStreams, type StreamsFixture } from "../support/streams.ts";

describe("atomic multi-aggregate append (JetStream atomic batch) against a real nats-server", () => {
  let fx: StreamsFixture;
  let store: EventStore;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"));
    store = createEventStore(fx.nc, fx.layout);
  });
  afterEach(async () => {
    await fx.close();
  });

  const run = runRef(ids.tenant, "run-1");
  const exec = execRef(ids.tenant, "ex-1");
  const streamLast = async () => (await fx.jsm.streams.info(fx.layout.eventStream)).state.last_seq;

  async function seed() {
    const r = await store.append(run, event("run.submitted"), { expectedSeq: 0 });
    const e = await store.append(exec, event("exec.started"), { expectedSeq: 0 });
    return { run: r.seq, exec: e.seq };
  }

  it("stores every event of every aggregate contiguously when all expectations hold", async () => {
    const s = await seed();
    const r = await store.appendAtomic([
      { ref: exec, expectedSeq: s.exec, events: [event("exec.paused-for-recovery"), event("exec.resumed")] },
      { ref: run, expectedSeq: s.run, events: [event("run.requeued-for-resume")] },
    ]);
    expect(r).toEqual([
      { seq: 3, duplicate: false },
      { seq: 4, duplicate: false },
      { seq: 5, duplicate: false },
    ]);
    expect((await store.read(exec)).events.map((e) => e.event.type)).toEqual([
      "exec.started",
      "exec.paused-for-recovery",
      "exec.resumed",
    ]);
    expect((await store.read(run)).lastSeq).toBe(5);
  });

  it("stores nothing when one aggregate's expectation is stale and reports which one as version-conflict", async () => {
    const s = await seed();
    await store.append(run, event("run.queued-globally"), { expectedSeq: s.run }); // the run moves on: s.run is now stale
    const before = { last: await streamLast(), run: await store.read(run), exec: await store.read(exec) };
    const err = await store
      .appendAtomic([
        { ref: exec, expectedSeq: s.exec, events: [event("exec.paused-for-recovery"), event("exec.step-completed")] },
        { ref: run, expectedSeq: s.run, events: [event("run.requeued-for-resume")] },
      ])
      .catch((x: unknown) => x);
    expect(isDroverError(err, "version-conflict")).toBe(true);
    expect((err as { details: { stale: unknown[] } }).details.stale).toEqual([
      { subject: `${fx.layout.eventPrefix}.run.${ids.tenant}.run-1.>`, expectedSeq: s.run, actualSeq: 3 },
    ]);
    expect(await streamLast()).toBe(before.last);
    expect(await store.read(run)).toEqual(before.run);
    expect(await store.read(exec)).toEqual(before.exec);

    // An expectation no writer ever used (no msg-id collision): the server's own 10071 path.
    const ahead = await store
      .appendAtomic([
        { ref: exec, expectedSeq: s.exec, events: [event("exec.paused-for-recovery")] },
        { ref: run, expectedSeq: 99, events: [event("run.requeued-for-resume")] },
      ])
      .catch((x: unknown) => x);
    expect(isDroverError(ahead, "version-conflict")).toBe(true);
    expect((ahead as { details: object }).details).toMatchObject({ jsCode: 10071, expectedSeq: 99, actualSeq: 3 });
    expect(await streamLast()).toBe(before.last);
    expect(await store.read(exec)).toEqual(before.exec);
  });

  it("treats a retry of an already committed batch as a duplicate, storing nothing twice", async () => {
    const s = await seed();
    const entries = [
      { ref: exec, expectedSeq: s.exec, events: [event("exec.paused-for-recovery")] },
      { ref: run, expectedSeq: s.run, events: [event("run.requeued-for-resume"), event("run.replacement-selected")] },
    ];
    const first = await store.appendAtomic(entries);
    const retry = await store.appendAtomic(entries);
    expect(retry).toEqual(first.map((a) => ({ ...a, duplicate: true })));
    expect(await streamLast()).toBe(5);
  });

  it("rejects an invalid event, an empty entry or a repeated aggregate before anything is sent", async () => {
    await seed();
    const cases = [
      [{ ref: exec, expectedSeq: 2, events: [event("run.cancelled")] }],
      [{ ref: exec, expectedSeq: 2, events: [] }],
      [
        { ref: exec, expectedSeq: 2, events: [event("exec.completed")] },
        { ref: exec, expectedSeq: 2, events: [event("exec.failed")] },
      ],
    ];
    for (const entries of cases)
      expect(isDroverError(await store.appendAtomic(entries).catch((x: unknown) => x), "contract-violation")).toBe(
        true,
      );
    expect(await streamLast()).toBe(2);
  });
});
