import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { memoryCheckpointStore } from "../../streams/checkpoints.ts";
import { createEventStore } from "../../streams/event-store.ts";
import {
  createProjectionRunner,
  type Projection,
  type ProjectionRunnerOptions,
} from "../../streams/projection-runner.ts";
import { runRef } from "../../streams/subjects.ts";
import type { EventStore } from "../../streams/types.ts";
import { ids } from "../support/example-events.ts";
import { event, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * A projection runner's live batches against a real nats-server: how many events one batch may
 * hold (liveBatchSize) and how long caught-up events are held for more (lingerMs, maxLingerMs).
 */
describe("a projection runner's live batches and linger windows against a real nats-server", () => {
  let fx: StreamsFixture;
  let store: EventStore;
  let next = 0;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"));
    store = createEventStore(fx.nc, fx.layout);
  });
  afterEach(async () => {
    await fx.close();
  });

  /** Appends one fresh run's submission; returns its stream sequence. */
  const runEvent = async () =>
    (await store.append(runRef(ids.tenant, `live-${next++}`), event("run.submitted"), { expectedSeq: 0 })).seq;

  /** A runner whose projection records the sequences of each batch it is handed. */
  function recording(name: string, opts: ProjectionRunnerOptions) {
    const batches: number[][] = [];
    const projection: Projection = {
      name,
      apply: () => {
        throw new Error("apply must not be called when applyBatch exists");
      },
      applyBatch: async (es) => {
        batches.push(es.map((e) => e.seq));
      },
    };
    const cps = memoryCheckpointStore();
    return { runner: createProjectionRunner(fx.nc, fx.layout, projection, cps, opts), batches, cps };
  }

  /** A live, caught-up runner with these linger settings, its batch record emptied. */
  async function lingering(name: string, lingerMs: number, maxLingerMs?: number) {
    const r = recording(name, { lingerMs, ...(maxLingerMs === undefined ? {} : { maxLingerMs }) });
    void r.runner.start();
    await r.runner.waitFor(await runEvent());
    r.batches.length = 0;
    return r;
  }

  /**
   * `n` events appended at once (one round trip, not n in a row that a loaded machine may stretch
   * past a linger window); returns their sequences in stream order.
   */
  const burst = async (n: number) =>
    (await Promise.all(Array.from({ length: n }, () => runEvent()))).sort((a, b) => a - b);

  /**
   * `n` events `gapMs` apart; returns their sequences and how many gaps between two appends came out
   * at least `longGapMs` (a loaded machine's stall, which may close a linger window early).
   */
  async function trickle(n: number, gapMs: number, longGapMs = Infinity) {
    const seqs: number[] = [];
    let longGaps = 0;
    let last: number | undefined;
    for (let i = 0; i < n; i++) {
      seqs.push(await runEvent());
      const now = performance.now();
      if (last !== undefined && now - last >= longGapMs) longGaps++;
      last = now;
      await new Promise((r) => setTimeout(r, gapMs));
    }
    return { seqs, longGaps };
  }

  it("live, batches are capped by liveBatchSize while catch-up keeps batchSize", async () => {
    let caughtUpTo = 0;
    for (let i = 0; i < 7; i++) caughtUpTo = await runEvent();
    const { runner, batches } = recording("live-batch", { batchSize: 3, liveBatchSize: 5, lingerMs: 2_000 });
    expect(await runner.catchUp()).toBe(caughtUpTo);
    expect(batches.flat()).toEqual(Array.from({ length: caughtUpTo }, (_, i) => i + 1));
    expect(Math.max(...batches.map((b) => b.length))).toBe(3);
    batches.length = 0;
    void runner.start();
    const seqs = await burst(12);
    await runner.waitFor(seqs.at(-1)!, 10_000);
    // Twelve events within one linger window: full batches of 5 written at once, the rest when the window ends.
    expect(batches).toEqual([seqs.slice(0, 5), seqs.slice(5, 10), seqs.slice(10)]);
    await runner.stop();
  });

  it("live and caught up with lingerMs, holds events for more and hands them over in one batch, then saves the checkpoint", async () => {
    const { runner, batches, cps } = await lingering("linger-hold", 2_000);
    const seqs = await burst(5);
    await runner.waitFor(seqs.at(-1)!, 10_000);
    // Each append was caught up on its own (nothing pending): without the window, five batches.
    expect(batches).toEqual([seqs]);
    expect(await cps.load("linger-hold")).toBe(seqs.at(-1));
    await runner.stop();
  });

  it("with lingerMs, a steady trickle is still handed over at least once per window from the first event held, never held until it stops", async () => {
    const { runner, batches } = await lingering("linger-trickle", 200);
    // 40 events 50 ms apart: every gap is shorter than the window, so a window restarted by each
    // event would hold all 40 until the trickle stops.
    const { seqs } = await trickle(40, 50);
    await runner.waitFor(seqs.at(-1)!, 10_000);
    expect(batches.flat()).toEqual(seqs);
    expect(batches.length).toBeGreaterThanOrEqual(4);
    await runner.stop();
  });

  it("with maxLingerMs, a busy trickle is held past lingerMs, up to maxLingerMs from its first event, never until it stops", async () => {
    const { runner, batches } = await lingering("linger-busy", 200, 800);
    const t0 = performance.now();
    // 40 events 50 ms apart: every window of 200 ms brings more, so each is held on up to 800 ms.
    // A gap of 100 ms or more between two appends (none on a quiet machine) may have been 200 ms at
    // the runner and ended a window early, one batch more each: the bound counts them.
    const { seqs, longGaps } = await trickle(40, 50, 100);
    const elapsed = performance.now() - t0;
    await runner.waitFor(seqs.at(-1)!, 10_000);
    expect(batches.flat()).toEqual(seqs);
    // Windows of 200 ms alone would hand over one batch per ~250 ms (at least 8 in 2 s).
    expect(batches.length).toBeLessThanOrEqual(Math.ceil(elapsed / 800) + 1 + longGaps);
    expect(batches.length).toBeGreaterThanOrEqual(2);
    await runner.stop();
  });

  it("with maxLingerMs, a quiet stream's lone event is still handed over after lingerMs, not maxLingerMs", async () => {
    const { runner, batches } = await lingering("linger-quiet", 200, 5_000);
    const t0 = performance.now();
    const seq = await runEvent();
    await runner.waitFor(seq, 10_000);
    // Held until maxLingerMs it could not be written before 5 s; the margin is the loaded machine's.
    expect(performance.now() - t0).toBeLessThan(5_000);
    expect(batches).toEqual([[seq]]);
    await runner.stop();
  });
  it("live, a consumer deleted under the runner is recreated from its position: every event after it is applied once, in order", async () => {
    const { runner, batches } = await lingering("consumer-lost", 50);
    const before = await burst(3);
    await runner.waitFor(before.at(-1)!, 10_000);
    // The live reads are pulls: a waiting one is told "consumer deleted", and the runner starts again.
    for await (const c of await fx.jsm.consumers.list(fx.layout.eventStream))
      await fx.jsm.consumers.delete(fx.layout.eventStream, c.name);
    const after = await burst(4);
    await runner.waitFor(after.at(-1)!, 20_000);
    expect(batches.flat()).toEqual([...before, ...after]);
    await runner.stop();
  });
});
