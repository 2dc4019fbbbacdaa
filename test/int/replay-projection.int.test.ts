import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { DroverError, isDroverError, type DroverEvent } from "../../contracts/index.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { memoryCheckpointStore } from "../../streams/checkpoints.ts";
import { createEventStore } from "../../streams/event-store.ts";
import { fold } from "../../streams/fold.ts";
import { createProjectionRunner, type Projection } from "../../streams/projection-runner.ts";
import { eventTypeFilter, execRef, runRef } from "../../streams/subjects.ts";
import type { EventStore, StoredEvent } from "../../streams/types.ts";
import { ids } from "../support/example-events.ts";
import { event, eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/** A small read model: per aggregate subject prefix, the event types seen, keyed by seq (so re-applying is harmless). */
function countingProjection(name: string, filter?: string | string[]) {
  const rows = new Map<number, string>();
  const p: Projection = {
    name,
    ...(filter ? { filter } : {}),
    apply: (e) => {
      rows.set(e.seq, `${e.subject}|${e.event.type}`);
    },
    reset: () => {
      rows.clear();
    },
  };
  return { p, rows };
}

type RunView = { readonly status: string; readonly events: number; readonly lastSeq: number };
const evolve = (s: RunView, e: StoredEvent): RunView => ({
  status: e.event.type.split(".")[1]!,
  events: s.events + 1,
  lastSeq: e.seq,
});
const initial: RunView = { status: "none", events: 0, lastSeq: 0 };

describe("replay, fold and projections against a real nats-server", () => {
  let fx: StreamsFixture;
  let store: EventStore;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"));
    store = createEventStore(fx.nc, fx.layout);
    next = 0;
  });
  afterEach(async () => {
    await fx.close();
  });

  let next = 0;
  /** Appends `runs` fresh runs (3 events each) and executions (1 event each); returns the last stream seq. */
  async function seed(runs: number): Promise<number> {
    let last = 0;
    for (const i of Array.from({ length: runs }, () => next++)) {
      const r = await store.appendAll(
        runRef(ids.tenant, `run-${i}`),
        [event("run.submitted"), event("run.queued-globally"), event("run.admitted")],
        { expectedSeq: 0 },
      );
      const x = await store.append(execRef(ids.tenant, `ex-${i}`), event("exec.started"), { expectedSeq: 0 });
      last = Math.max(r.at(-1)!.seq, x.seq);
    }
    return last;
  }

  it("replays into a fold twice with identical state, stopping at the end as of the call", async () => {
    const last = await seed(20);
    const collect = async () => {
      const out: StoredEvent[] = [];
      const end = await store.replay({ seq: 1 }, (e) => {
        out.push(e);
      });
      return { out, end };
    };
    const a = await collect();
    const b = await collect();
    expect(a.end).toBe(last);
    expect(a.out.map((e) => e.seq)).toEqual(Array.from({ length: last }, (_, i) => i + 1));
    expect(fold(a.out, evolve, initial)).toEqual(fold(b.out, evolve, initial));
    expect(fold(a.out, evolve, initial)).toEqual({ status: "started", events: last, lastSeq: last });
    // each replay removes its ordered consumer instead of leaving it to expire
    expect((await fx.jsm.consumers.list(fx.layout.eventStream).next()).length).toBe(0);
  });

  it("replays from a sequence, from a time and through filters, in stream order", async () => {
    await seed(4);
    const all: StoredEvent[] = [];
    await store.replay({ seq: 1 }, (e) => {
      all.push(e);
    });
    const fromSeq: number[] = [];
    expect(
      await store.replay({ seq: 10 }, (e) => {
        fromSeq.push(e.seq);
      }),
    ).toBe(16);
    expect(fromSeq).toEqual([10, 11, 12, 13, 14, 15, 16]);
    // From a time: exactly the suffix of events stored at or after it (times are ms-truncated here,
    // nanoseconds on the server, so earlier events in the same millisecond legitimately qualify).
    const t = all[12]!.time;
    const fromTime: StoredEvent[] = [];
    await store.replay({ time: t }, (e) => {
      fromTime.push(e);
    });
    const first = fromTime[0]!.seq;
    expect(fromTime.map((e) => e.seq)).toEqual(all.filter((e) => e.seq >= first).map((e) => e.seq));
    expect(first).toBeLessThanOrEqual(13);
    for (const e of fromTime) expect(e.time.getTime()).toBeGreaterThanOrEqual(t.getTime());
    if (first > 1) expect(all[first - 2]!.time.getTime()).toBeLessThan(t.getTime());
    const admitted: string[] = [];
    await store.replay(
      { seq: 1 },
      (e) => {
        admitted.push(e.event.type);
      },
      { filter: [eventTypeFilter(fx.layout, "run.admitted"), eventTypeFilter(fx.layout, "exec.started")] },
    );
    expect(admitted).toEqual(Array.from({ length: 4 }, () => ["run.admitted", "exec.started"]).flat());
    expect(
      await store.replay({ seq: 1 }, () => undefined, { filter: eventTypeFilter(fx.layout, "run.cancelled") }),
    ).toBe(0);
    expect(await store.replay({ seq: 17 }, () => undefined)).toBe(0);
    expect(await store.replay({ time: new Date(Date.now() + 60_000) }, () => undefined)).toBe(0);
  });

  it("stops a replay at an undecodable event with its stream sequence instead of skipping it", async () => {
    await seed(1);
    await fx.jsm.jetstream().publish(`${fx.layout.eventPrefix}.run.${ids.tenant}.run-x.submitted`, "not json");
    await seed(1);
    const seen: number[] = [];
    const err = await store
      .replay({ seq: 1 }, (e) => {
        seen.push(e.seq);
      })
      .catch((x: unknown) => x);
    expect(isDroverError(err, "contract-violation")).toBe(true);
    expect((err as { details: { seq: number } }).details.seq).toBe(5);
    expect(seen).toEqual([1, 2, 3, 4]);
  });

  it("fails a replay whose connection closes part-way instead of returning the part as the whole", async () => {
    const last = await seed(200); // 800 events: far more than the replay's client buffer
    for (const inHandler of [true, false]) {
      const own = await connectHarness({ servers: inject("natsUrl") });
      let seen = 0;
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const replayed = createEventStore(own, fx.layout).replay({ seq: 1 }, async (e) => {
        seen = e.seq;
        if (e.seq !== 10) return;
        // What a stop during a build or a catch-up does: the connection closes from the handler, or
        // from elsewhere while the handler waits (a projection's write).
        if (inHandler) await own.close();
        else await held;
      });
      if (!inHandler) {
        await eventually("the handler waits", async () => (seen === 10 ? true : undefined));
        await own.close();
        release();
      }
      const err = await replayed.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isDroverError(err) && err.code, `${inHandler}: ${String(err)}`).toBe("event-store-unavailable");
      expect(String((err as Error).message)).toMatch(/sequence \d+ (of|before) \d+/);
      expect(seen).toBeLessThan(last);
    }
  });

  it("rebuilds a projection from sequence 1 to exactly the live one, applying each sequence once past the checkpoint", async () => {
    await seed(5);
    const live = countingProjection("runs-live");
    const cps = memoryCheckpointStore();
    const runner = createProjectionRunner(fx.nc, fx.layout, live.p, cps);
    await runner.start();
    const more = await seed(5);
    await runner.waitFor(more);
    expect(await cps.load("runs-live")).toBe(more);

    const rebuilt = countingProjection("runs-rebuilt");
    const rebuilder = createProjectionRunner(fx.nc, fx.layout, rebuilt.p, memoryCheckpointStore({ "runs-rebuilt": 7 }));
    expect(await rebuilder.rebuild()).toBe(more);
    expect(rebuilt.rows).toEqual(live.rows);
    expect(rebuilt.rows.size).toBe(more);

    // Restarting from the checkpoint applies nothing twice and picks up only new events.
    await runner.stop();
    expect((await fx.jsm.consumers.list(fx.layout.eventStream).next()).length).toBe(0);
    const applied: number[] = [];
    const again = createProjectionRunner(
      fx.nc,
      fx.layout,
      {
        ...live.p,
        apply: (e) => {
          applied.push(e.seq);
          return live.p.apply(e);
        },
      },
      cps,
    );
    const after = await store.append(runRef(ids.tenant, "run-0"), event("run.dispatched"), {
      expectedSeq: await store.lastSeq(runRef(ids.tenant, "run-0")),
    });
    expect(await again.catchUp()).toBe(after.seq);
    expect(applied).toEqual([after.seq]);
  });

  it("retries an apply that fails with an infrastructure error on the same event instead of skipping it", async () => {
    await seed(1);
    let failures = 2;
    const seen: number[] = [];
    const flaky: Projection = {
      name: "flaky",
      apply: (e: StoredEvent) => {
        if (e.seq === 2 && failures-- > 0) throw new Error("read model store unreachable");
        seen.push(e.seq);
      },
    };
    const runner = createProjectionRunner(fx.nc, fx.layout, flaky, memoryCheckpointStore(), { retryDelayMs: 5 });
    expect(await runner.catchUp()).toBe(4);
    expect(seen).toEqual([1, 2, 3, 4]);
  });

  it("steps over poison instead of stopping: an undecodable event (catch-up and live), an unknown type and an event its fold refuses are each reported once; every other event is applied once", async () => {
    await seed(1); // 1..4
    const pub = (subject: string, body: string) =>
      fx.jsm.jetstream().publish(`${fx.layout.eventPrefix}.${subject}`, body);
    await pub(`run.${ids.tenant}.run-x.submitted`, "not json"); // 5
    await pub(`run.${ids.tenant}.run-y.renamed`, JSON.stringify({ ...event("run.submitted"), type: "run.renamed" })); // 6
    await seed(1); // 7..10
    const refused = 8;
    const applied: number[] = [];
    const skips: { seq: number; error: string }[] = [];
    const picky: Projection = {
      name: "picky",
      applyBatch: async (events) => {
        if (events.some((e) => e.seq === refused))
          throw new DroverError("contract-violation", `the fold refuses ${refused}`);
        applied.push(...events.map((e) => e.seq));
      },
      apply: () => undefined,
    };
    const cps = memoryCheckpointStore();
    const runner = createProjectionRunner(fx.nc, fx.layout, picky, cps, {
      onSkip: (x) => skips.push({ seq: x.seq, error: x.error }),
    });
    expect(await runner.catchUp()).toBe(10);
    expect(applied).toEqual([1, 2, 3, 4, 7, 9, 10]);
    expect(skips.map((x) => x.seq)).toEqual([5, 6, refused]);
    expect(skips[0]!.error).toMatch(/not JSON/);
    expect(skips[2]!.error).toMatch(/the fold refuses 8/);
    expect(await cps.load("picky")).toBe(10);
    // Live: garbage arriving while the runner follows is stepped over the same way.
    await runner.start();
    await pub(`run.${ids.tenant}.run-z.submitted`, "{"); // 11
    const last = await seed(1); // 12..15
    await runner.waitFor(last);
    expect(skips.map((x) => x.seq)).toEqual([5, 6, refused, 11]);
    expect(applied.slice(7)).toEqual([12, 13, 14, 15]);
    await runner.stop();
  });

  it("stop() right after start() returns, even while the live consumer is still being created (it used to wait for ever)", async () => {
    await seed(1);
    for (let i = 0; i < 5; i++) {
      const runner = createProjectionRunner(
        fx.nc,
        fx.layout,
        countingProjection(`stop-${i}`).p,
        memoryCheckpointStore(),
      );
      await runner.start();
      const stopped = await Promise.race([
        runner.stop().then(() => "stopped"),
        new Promise((r) => setTimeout(() => r("hung"), 5_000)),
      ]);
      expect(stopped).toBe("stopped");
    }
  });

  it("applies in batches when the projection takes them: every event once, in stream order, the checkpoint at the end", async () => {
    const last = await seed(5);
    const batches: number[][] = [];
    const batched: Projection = {
      name: "batched",
      apply: () => {
        throw new Error("apply must not be called when applyBatch exists");
      },
      applyBatch: async (es) => {
        batches.push(es.map((e) => e.seq));
      },
    };
    const cps = memoryCheckpointStore();
    const runner = createProjectionRunner(fx.nc, fx.layout, batched, cps, { batchSize: 3 });
    expect(await runner.catchUp()).toBe(last);
    expect(batches.flat()).toEqual(Array.from({ length: last }, (_, i) => i + 1));
    expect(Math.max(...batches.map((b) => b.length))).toBe(3);
    expect(await cps.load("batched")).toBe(last);
  });

  it("folds one aggregate's history read from the store", async () => {
    await seed(2);
    const h = await store.read(runRef(ids.tenant, "run-1"));
    const types = fold(h.events, (s: string[], e: StoredEvent) => [...s, (e.event as DroverEvent).type], []);
    expect(types).toEqual(["run.submitted", "run.queued-globally", "run.admitted"]);
  });
});
