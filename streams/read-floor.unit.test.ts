import { describe, expect, it } from "vitest";
import type { JetStreamManager } from "@nats-io/jetstream";
import { encodeEvent } from "../contracts/index.ts";
import { event } from "../test/support/streams.ts";
import { readFloor } from "./read-floor.ts";
import type { Reader } from "./scoped-read.ts";
import { DEFAULT_LAYOUT } from "./layout.ts";
import { aggregateWildcard, eventSubject, runRef } from "./subjects.ts";
import type { StoredEvent } from "./types.ts";

// A fake lagging replica and a fake leader: proves no transport (the real R3 case is
// test/int/nats-cluster.int.test.ts, reads right after appends across a leader change).
const ref = runRef("tenant-a", "run-1");
const filter = aggregateWildcard(DEFAULT_LAYOUT, ref);
const subject = eventSubject(DEFAULT_LAYOUT, ref, "run.submitted");
const stored = (seq: number): StoredEvent => ({ seq, subject, time: new Date(0), event: event("run.submitted") });

/** A reader whose replica has applied up to `applied` (raised by the test), reading seqs 1..applied. */
function laggingReader(state: { applied: number; reads: number }): Reader {
  return {
    filtered: async (_f, fromSeq) => {
      state.reads++;
      const out: StoredEvent[] = [];
      for (let s = Math.max(1, fromSeq); s <= state.applied; s++) out.push(stored(s));
      return out;
    },
    first: async () => null,
    lastSeq: async () => state.applied,
    last: async () => null,
  };
}

describe("readFloor: read-your-writes over lagging Direct Get replicas (fakes, no transport)", () => {
  it("a read that ends at or after what this store wrote is returned as read, with no further request", async () => {
    const state = { applied: 3, reads: 0 };
    const floor = readFloor(laggingReader(state), undefined, "S");
    floor.wrote(filter, 3);
    const events = await floor.complete(filter, [stored(1), stored(2), stored(3)], 3);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(state.reads).toBe(0);
  });

  it("a read that ends before this store's last write re-reads the tail until the replica caught up", async () => {
    const state = { applied: 2, reads: 0 };
    const reader = laggingReader(state);
    const floor = readFloor(reader, undefined, "S");
    floor.wrote(filter, 4);
    const first = await reader.filtered(filter, 1);
    state.applied = 4; // the replica applies the writes while the store re-reads
    const events = await floor.complete(filter, first, 2);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
  });

  it("a replica that stays behind: the tail comes from the leader, one message per request, up to the write", async () => {
    const state = { applied: 1, reads: 0 };
    const asked: number[] = [];
    const jsm = {
      streams: {
        getMessage: async (_s: string, q: { seq: number }) => {
          asked.push(q.seq);
          return q.seq <= 3
            ? { seq: q.seq, subject, time: new Date(0), data: encodeEvent(event("run.submitted")) }
            : null;
        },
      },
    } as unknown as JetStreamManager;
    const floor = readFloor(laggingReader(state), Promise.resolve(jsm), "S");
    floor.wrote(filter, 3);
    const events = await floor.complete(filter, [stored(1)], 1);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(asked).toEqual([2, 3]);
    expect(state.reads).toBe(4); // the direct retries came first
  });

  it("without leader reads (a subject-scoped identity) a replica that stays behind gives what it has", async () => {
    const state = { applied: 1, reads: 0 };
    const floor = readFloor(laggingReader(state), undefined, "S");
    floor.wrote(filter, 3);
    expect((await floor.complete(filter, [stored(1)], 1)).map((e) => e.seq)).toEqual([1]);
  });

  it("a sequence the caller knows is there (another writer's, delivered to it) is completed as this store's own write", async () => {
    const state = { applied: 0, reads: 0 };
    const reader = laggingReader(state);
    const floor = readFloor(reader, undefined, "S");
    const first = await reader.filtered(filter, 1); // nothing written by this store: no floor of its own
    state.applied = 2;
    expect((await floor.complete(filter, first, 0, undefined, undefined, 2)).map((e) => e.seq)).toEqual([1, 2]);
    expect((await floor.complete(filter, [], 0)).length).toBe(0); // without it, the read is taken as it came
  });

  it("remembers at most 4096 aggregates, forgetting the least recently written", async () => {
    const state = { applied: 0, reads: 0 };
    const floor = readFloor(laggingReader(state), undefined, "S");
    floor.wrote(filter, 5);
    for (let i = 0; i < 4096; i++) floor.wrote(`other.${i}`, 1);
    await floor.complete(filter, [], 0);
    expect(state.reads).toBe(0); // forgotten: no re-read
    floor.wrote(filter, 5);
    await floor.complete(filter, [], 0);
    expect(state.reads).toBe(4);
  });
});
