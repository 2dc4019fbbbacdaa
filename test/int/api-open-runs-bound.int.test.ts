import { jetstream } from "@nats-io/jetstream";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import type { EventType } from "../../contracts/index.ts";
import { randomIds, systemClock, type EnvelopeContext } from "../../platform/envelope.ts";
import { startOpenRunsProjection } from "../../services/api/index.ts";
import { createEventStore, runRef, type EventStore } from "../../streams/index.ts";
import { encodeFor } from "../../streams/store-context.ts";
import { exampleDag, exampleEvent } from "../support/example-events.ts";
import { looseEvent } from "../support/loose-event.ts";
import { freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * The api's open-runs view with a bound on closed run ids, against a real nats-server (ordered
 * consumer, stored headers, direct gets): memory holds at most the bound, the counts equal the
 * unbounded view's, a late duplicate `submitted` of a run that left memory never reopens it, and a
 * claim stops counting once the sequence its submission was stored at is folded.
 */
const ctx: EnvelopeContext = { writer: { service: "api", instanceId: "api-1" }, clock: systemClock, ids: randomIds };
const T = "t-bound";
const ev = (type: EventType, id: string, data: unknown) =>
  looseEvent(ctx, type, data, { tenantId: T, correlationId: id, causationId: "test" });
const submitted = (id: string) =>
  ev("run.submitted", id, { sharedRunId: id, dag: exampleDag, source: "api", labels: {} });
const completed = (id: string) => ev("run.rejected", id, { reason: { code: "tenant-quota-exceeded", detail: "test" } });

describe("the api's open-runs view with bounded closed runs (real NATS)", () => {
  let fx: StreamsFixture, store: EventStore;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "orb");
    store = createEventStore(fx.nc, fx.layout);
  });
  afterEach(async () => {
    await fx.close();
  });

  const view = (maxClosed?: number) =>
    startOpenRunsProjection(jetstream(fx.nc), fx.jsm, fx.layout, maxClosed === undefined ? {} : { maxClosed });
  const count = async (p: Awaited<ReturnType<typeof view>>) => {
    await p.queueDepths(); // caught up with every run event stored so far
    const c = await p.claim(T, "probe", { maxOpenRuns: 1000, maxQueuedRuns: 1000 });
    c.release();
    return c.openRuns;
  };
  /** A `submitted` stored as a producer without the expectation headers would store it (no first-submission check). */
  const rawSubmitted = async (id: string) => {
    const enc = encodeFor(fx.layout, runRef(T, id), submitted(id));
    return (await jetstream(fx.nc).publish(enc.subject, enc.data)).seq;
  };

  it("keeps at most maxClosed closed ids, counts what the unbounded view counts, and never reopens a dropped run on a late duplicate submitted (read back from the log)", async () => {
    for (let n = 0; n < 10; n++)
      await store.appendAll(runRef(T, `run-${n}`), [submitted(`run-${n}`), completed(`run-${n}`)], { expectedSeq: 0 });
    for (const id of ["run-10", "run-11"]) await store.append(runRef(T, id), submitted(id), { expectedSeq: 0 });
    await rawSubmitted("run-0"); // a late duplicate of a run that closed first (dropped from the bounded view)
    await rawSubmitted("run-9"); // a late duplicate of a run still in memory
    await rawSubmitted("run-12"); // a producer's first submission, without the expectation
    const bounded = await view(3);
    const full = await view();
    try {
      expect(await count(bounded)).toBe(3); // run-10, run-11, run-12
      expect(await count(full)).toBe(3);
      expect(bounded.closedRuns()).toEqual({ inMemory: 3, dropped: 7 });
      expect(full.closedRuns()).toEqual({ inMemory: 10, dropped: 0 });
      // A late duplicate arriving live, after the drop, is read back too.
      await rawSubmitted("run-1");
      expect(await count(bounded)).toBe(3);
    } finally {
      await bounded.stop();
      await full.stop();
    }
  });

  it("a claim whose run is submitted, closed and dropped before the claim is released stops counting: it waits for the stored sequence, not for the run id in memory", async () => {
    const p = await view(0);
    try {
      const c = await p.claim(T, "run-x", { maxOpenRuns: 1000, maxQueuedRuns: 1000 });
      const [stored] = await store.appendAll(runRef(T, "run-x"), [submitted("run-x"), completed("run-x")], {
        expectedSeq: 0,
      });
      await p.queueDepths(); // folded: run-x opened, closed and left memory (bound 0)
      expect(p.closedRuns()).toEqual({ inMemory: 0, dropped: 1 });
      c.release(stored!.seq);
      expect(await count(p)).toBe(0);
      // A claim released with a sequence not folded yet keeps counting until it is.
      const d = await p.claim(T, "run-y", { maxOpenRuns: 1000, maxQueuedRuns: 1000 });
      const last = (await fx.jsm.streams.info(fx.layout.eventStream)).state.last_seq;
      d.release(last + 1);
      const e = await p.claim(T, "probe", { maxOpenRuns: 1000, maxQueuedRuns: 1000 });
      e.release();
      expect(e.openRuns).toBe(1);
      await store.append(runRef(T, "run-y"), submitted("run-y"), { expectedSeq: 0 });
      expect(await count(p)).toBe(1); // run-y open, the claim folded: counted once
    } finally {
      await p.stop();
    }
  });

  it("near a limit, counts answer when the tenant's last run event is one the view is not sent (admitted, dispatched): it waits for the last event that moves a count, not for any run event", async () => {
    const admitted = (id: string) => ev("run.admitted", id, exampleEvent("run.admitted").data);
    const dispatched = (id: string) => ev("run.dispatched", id, exampleEvent("run.dispatched").data);
    await store.appendAll(runRef(T, "run-a"), [submitted("run-a"), admitted("run-a"), dispatched("run-a")], {
      expectedSeq: 0,
    });
    const p = await startOpenRunsProjection(jetstream(fx.nc), fx.jsm, fx.layout, { catchUpTimeoutMs: 2_000 });
    try {
      // Within 16 of the cap: the claim reads the log's last events first, then waits for the view.
      const c = await p.claim(T, "run-b", { maxQueuedRuns: 2 });
      c.release();
      expect({ open: c.openRuns, queued: c.queuedRuns }).toEqual({ open: 1, queued: 1 });
      expect(await p.queueDepths()).toEqual({ [T]: 1 });
    } finally {
      await p.stop();
    }
  });
});
