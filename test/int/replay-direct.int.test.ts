import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { createEventStore } from "../../streams/event-store.ts";
import { eventTypeFilter, execRef, runRef } from "../../streams/subjects.ts";
import type { EventStore } from "../../streams/types.ts";
import { ids } from "../support/example-events.ts";
import { event, eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * A short replay on one filter (a catch-up: the provisioner's roster before each claim) is read with
 * one batched Direct Get instead of an ordered consumer the server creates and deletes (real
 * nats-server; consumers counted by the server's CONSUMER.CREATED advisories).
 */
describe("replay of a short range by batched Direct Get (real nats-server)", () => {
  let fx: StreamsFixture;
  let store: EventStore;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"));
    store = createEventStore(fx.nc, fx.layout);
  });
  afterEach(async () => {
    await fx.close();
  });

  /** `n` runs with 2 events each and an execution event between them: the filter skips every third. */
  async function seed(n: number, from = 0): Promise<void> {
    for (let i = from; i < from + n; i++) {
      await store.appendAll(runRef(ids.tenant, `run-${i}`), [event("run.submitted"), event("run.admitted")], {
        expectedSeq: 0,
      });
      await store.append(execRef(ids.tenant, `ex-${i}`), event("exec.started"), { expectedSeq: 0 });
    }
  }

  it("a catch-up of a few events creates no consumer; a long replay still streams through one; both in stream order up to the end as of the call", async () => {
    const created: string[] = [];
    const sub = fx.nc.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.CREATED.${fx.layout.eventStream}.>`, {
      callback: (_e, m) => void created.push(m.subject),
    });
    await seed(10); // sequences 1..30
    const filter = eventTypeFilter(fx.layout, "run.admitted");
    const short: number[] = [];
    // From sequence 5: the admitted events of runs 1..9 (sequences 5, 8, ..., 29).
    expect(await store.replay({ seq: 5 }, (e) => void short.push(e.seq), { filter })).toBe(29);
    expect(short).toEqual(Array.from({ length: 9 }, (_, i) => 5 + 3 * i));

    await seed(100, 10); // 300 more sequences: 110 runs, 220 run events
    await seed(30, 110); // 90 more: 140 runs, 280 run events, more than a direct head holds
    const runs = `${fx.layout.eventPrefix}.run.>`;
    const long: number[] = [];
    expect(await store.replay({ seq: 1 }, (e) => void long.push(e.seq), { filter: runs })).toBe(419);
    expect(long).toEqual(Array.from({ length: 140 }, (_, i) => [1 + 3 * i, 2 + 3 * i]).flat());
    await eventually("the long replay's consumer advisory", async () => (created.length > 0 ? true : undefined));
    await fx.nc.flush();
    expect(created).toHaveLength(1); // the long replay's only: the short one made none
    sub.unsubscribe();
  });

  it("a catch-up of a few events among more than 256 other sequences (a busy stream's step journals) creates no consumer", async () => {
    const created: string[] = [];
    const sub = fx.nc.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.CREATED.${fx.layout.eventStream}.>`, {
      callback: (_e, m) => void created.push(m.subject),
    });
    await seed(100); // sequences 1..300: 100 admitted events, one every third sequence
    const seen: number[] = [];
    // From sequence 2 to 300: 299 sequences, 100 of them on the filter.
    const filter = eventTypeFilter(fx.layout, "run.admitted");
    expect(await store.replay({ seq: 2 }, (e) => void seen.push(e.seq), { filter })).toBe(299);
    expect(seen).toEqual(Array.from({ length: 100 }, (_, i) => 2 + 3 * i));
    // A probe replay long enough to need one: its advisory arriving shows the server's advisories flow.
    await store.replay({ seq: 1 }, () => undefined);
    await eventually("the probe's consumer advisory", async () => (created.length > 0 ? true : undefined));
    await fx.nc.flush();
    expect(created).toHaveLength(1); // the probe's only: the catch-up made none
    sub.unsubscribe();
  });

  it("a short replay with events appended during it delivers none of them, and an empty short range none", async () => {
    await seed(5);
    const seen: number[] = [];
    let appended = false;
    const end = await store.replay({ seq: 10 }, async (e) => {
      seen.push(e.seq);
      if (appended) return;
      appended = true;
      await seed(3, 5); // stored during the replay, after its end
    });
    expect(end).toBe(15);
    expect(seen).toEqual([10, 11, 12, 13, 14, 15]);
    expect(
      await store.replay({ seq: 1 }, () => undefined, { filter: eventTypeFilter(fx.layout, "run.cancelled") }),
    ).toBe(0);
  });
});
