import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { createEventStore } from "../../streams/event-store.ts";
import { directBatches, readRaw } from "../../streams/stored.ts";
import { execRef, runRef } from "../../streams/subjects.ts";
import type { EventStore } from "../../streams/types.ts";
import { ids } from "../support/example-events.ts";
import { event, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * An aggregate read's batched Direct Gets never ask for more messages than match: nats-server
 * looks for the rest of a batch through every later message block (10.8 ms of its CPU per read
 * of a run in a stream of 12 000 runs; bench/direct-get-tail.bench.ts). Real nats-server; the
 * requests are seen on their own subject, as the server gets them.
 */
describe("aggregate reads by exact Direct Get batches (real nats-server)", () => {
  let fx: StreamsFixture;
  let store: EventStore;
  let asked: { seq: number; batch?: number; next_by_subj?: string }[];
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"));
    store = createEventStore(fx.nc, fx.layout);
    asked = [];
    fx.nc.subscribe(`$JS.API.DIRECT.GET.${fx.layout.eventStream}`, {
      callback: (_e, m) => void asked.push(m.json()),
    });
  });
  afterEach(async () => {
    await fx.close();
  });

  /** Run `run-0` gets 5 events, each after 3 other aggregates' events. */
  async function seed(): Promise<void> {
    const types = ["run.submitted", "run.admitted", "run.dispatched", "run.started", "run.completed"] as const;
    for (const [i, type] of types.entries()) {
      for (let k = 0; k < 3; k++)
        await store.append(execRef(ids.tenant, `ex-${i}-${k}`), event("exec.started"), { expectedSeq: 0 });
      await store.append(runRef(ids.tenant, "run-0"), event(type), { expectedSeq: i === 0 ? 0 : 4 * i });
    }
    await fx.nc.flush();
    asked = [];
  }

  it("reads a 5-event run in two requests: one message, then exactly the 4 its pending count names", async () => {
    await seed();
    const { events } = await store.read(runRef(ids.tenant, "run-0"));
    await fx.nc.flush();
    expect(events.map((e) => e.seq)).toEqual([4, 8, 12, 16, 20]);
    expect(asked.map((r) => [r.seq, r.batch])).toEqual([
      [1, 1],
      [5, 4],
    ]);
  });

  it("an aggregate with one event, or none, is one request of one message", async () => {
    await seed();
    expect((await store.read(runRef(ids.tenant, "run-absent"))).events).toEqual([]);
    expect((await store.read(execRef(ids.tenant, "ex-0-0"))).events).toHaveLength(1);
    await fx.nc.flush();
    expect(asked.map((r) => r.batch)).toEqual([1, 1]);
  });

  it("a bounded range, a capped read and a reader that stops early ask for no more than match", async () => {
    await seed();
    const filter = `${fx.layout.eventPrefix}.run.${ids.tenant}.run-0.*`;
    expect((await readRaw(fx.jsm, fx.layout.eventStream, filter, 5, 12)).map((m) => m.seq)).toEqual([8, 12]);
    expect((await readRaw(fx.jsm, fx.layout.eventStream, filter, 1, Infinity, 3)).map((m) => m.seq)).toEqual([
      4, 8, 12,
    ]);
    const taken: number[] = [];
    for await (const m of directBatches(fx.jsm, fx.layout.eventStream, filter, { batch: 2 })) {
      taken.push(m.seq);
      if (taken.length === 3) break;
    }
    await fx.nc.flush();
    expect(taken).toEqual([4, 8, 12]);
    expect(asked.map((r) => [r.seq, r.batch])).toEqual([
      [5, 1], // the range: 8, whose pending says 3 more match (12, 16, 20)
      [9, 3], // 12 is the last in range: the read stops at 16
      [1, 1], // at most 3: 4
      [5, 2], // then the 2 still wanted, of the 4 pending
      [1, 1], // a reader taking 3 in batches of at most 2
      [5, 2],
    ]);
  });
});
