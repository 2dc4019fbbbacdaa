import { jetstream } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import type { EventType } from "../../contracts/index.ts";
import { randomIds, systemClock, type EnvelopeContext } from "../../platform/envelope.ts";
import {
  createSnapshotStore,
  snapshotPrefixOf,
  snapshotStreamConfig,
  snapshotStreamOf,
  type SnapshotStore,
} from "../../platform/snapshots/store.ts";
import { startOpenRunsProjection } from "../../services/api/index.ts";
import { liveByPrefix, RosterView, type RosterOptions } from "../../services/provisioner/index.ts";
import { createEventStore, runRef, runtimeRef, type EventStore } from "../../streams/index.ts";
import { exampleDag, exampleEvent } from "../support/example-events.ts";
import { looseEvent } from "../support/loose-event.ts";
import { freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * Start-up from snapshots of the provisioner's roster and the API's open-runs view against a real
 * nats-server (the snapshot stream, the event stream, ordered consumers): the state restored from a
 * snapshot plus the folded tail equals the fold from sequence 1; a spoiled snapshot is ignored; the
 * roster's bound on ended runtimes keeps memory bounded, and a dropped runtime that comes back is
 * read from the log (never counted live).
 */
const quiet = pino({ level: "silent" });
const ctx = (service: "provisioner" | "api"): EnvelopeContext => ({
  writer: { service, instanceId: `${service}-1` },
  clock: systemClock,
  ids: randomIds,
});
const policy = { everyEvents: 1e9, everyMs: 1e9 };

describe("roster and open-runs snapshots (real NATS: the snapshot stream, the event stream, ordered consumers)", () => {
  let fx: StreamsFixture, store: EventStore, snaps: (owner: string) => SnapshotStore;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "snr");
    store = createEventStore(fx.nc, fx.layout);
    await fx.jsm.streams.add(snapshotStreamConfig(fx.layout));
    snaps = (owner) => createSnapshotStore(fx.nc, fx.layout, owner);
  });
  afterEach(async () => {
    await fx.jsm.streams.delete(snapshotStreamOf(fx.layout)).catch(() => undefined);
    await fx.close();
  });

  const rt = (type: EventType, id: string) =>
    looseEvent(ctx("provisioner"), type, exampleEvent(type).data, {
      tenantId: "tenant-a",
      correlationId: id,
      causationId: "test",
    });
  /** Registers runtimes `rt-red-<n>` (n from `from`), and ends every one whose number `ends(n)`. */
  async function runtimes(from: number, count: number, ends: (n: number) => boolean = () => false) {
    for (let n = from; n < from + count; n++) {
      const id = `rt-red-a${n}`;
      const events = [rt("runtime.registered", id), rt("runtime.host-start-requested", id)];
      if (ends(n)) events.push(rt("runtime.retired", id));
      await store.appendAll(runtimeRef(id), events, { expectedSeq: 0 });
    }
  }
  /** A store that counts the events each replay hands over (what a fold actually read). */
  const counting = () => {
    const seen = { n: 0 };
    const s: EventStore = {
      ...store,
      replay: (from, onEvent, o) => store.replay(from, (e) => (seen.n++, onEvent(e)), o),
    };
    return { s, seen };
  };
  const roster = (o: RosterOptions = {}, s = store) => new RosterView(s, fx.layout, o);
  const text = (v: RosterView) => new TextDecoder().decode(v.encode());
  const withSnaps = (rejected: string[] = [], max?: number): RosterOptions => ({
    ...(max === undefined ? {} : { maxEnded: max }),
    snapshots: {
      store: snaps("provisioner"),
      policy,
      log: quiet,
      clock: systemClock,
      onRejected: (r) => rejected.push(r),
    },
  });

  it("the provisioner's roster from a snapshot plus the tail equals the fold from sequence 1, folding only the tail", async () => {
    await runtimes(0, 10, (n) => n % 3 === 0);
    const first = roster(withSnaps());
    await first.current();
    await first.writeSnapshot();
    await first.stop();
    await runtimes(10, 3, (n) => n === 11);
    const { s, seen } = counting();
    const rejected: string[] = [];
    const fromSnap = roster(withSnaps(rejected), s);
    const r = await fromSnap.current();
    expect(rejected).toEqual([]);
    expect(seen.n).toBe(3 * 2 + 1);
    const full = roster();
    await full.current();
    expect(text(fromSnap)).toBe(text(full));
    expect(liveByPrefix(r, "rt-red").length).toBe(13 - 4 - 1);
    await fromSnap.stop();
  });

  it("a roster snapshot whose chunk fails its sha256 is ignored (counted) and the fold from 1 gives the same roster", async () => {
    await runtimes(0, 6, (n) => n < 2);
    const first = roster(withSnaps());
    await first.current();
    await first.writeSnapshot();
    const head = await fx.jsm.direct.getMessage(snapshotStreamOf(fx.layout), {
      last_by_subj: `${snapshotPrefixOf(fx.layout)}.provisioner.head`,
    });
    const slot = (head!.json() as { slot: string }).slot;
    await jetstream(fx.nc).publish(`${snapshotPrefixOf(fx.layout)}.provisioner.${slot}.0`, new Uint8Array([9, 9, 9]));
    const rejected: string[] = [];
    const { s, seen } = counting();
    const fromSnap = roster(withSnaps(rejected), s);
    await fromSnap.current();
    expect(rejected).toEqual(["checksum"]);
    expect(seen.n).toBe(6 * 2 + 2);
    const full = roster();
    await full.current();
    expect(text(fromSnap)).toBe(text(full));
  });

  it("the roster keeps at most maxEnded ended runtimes; a dropped one that comes back is read from the log and never counts live", async () => {
    await runtimes(0, 12, (n) => n < 10);
    const view = roster({ maxEnded: 3 });
    const before = await view.current();
    expect(view.size).toBe(2 + 3);
    expect(view.dropped).toBe(7);
    expect(before.runtimes.has("rt-red-a0")).toBe(false);
    expect(before.runtimes.has("rt-red-a9")).toBe(true);
    expect(liveByPrefix(before, "rt-red").map((x) => x.runtimeInstanceId)).toEqual(["rt-red-a10", "rt-red-a11"]);
    // A late event of a dropped runtime (its endpoint published after it was retired), then a new runtime.
    const last = await store.lastSeq(runtimeRef("rt-red-a0"));
    await store.append(runtimeRef("rt-red-a0"), rt("runtime.endpoint-published", "rt-red-a0"), { expectedSeq: last });
    await runtimes(12, 1);
    const after = await view.current();
    expect(view.readBack).toBe(1); // rt-red-a0 only: a first event (registered) of a new runtime is not read back
    // Read back whole: seen retired, it is the latest ended one now; the first of the others left instead.
    expect(after.runtimes.get("rt-red-a0")?.endedBy).toBe("retired");
    expect(after.runtimes.has("rt-red-a7")).toBe(false);
    expect(liveByPrefix(after, "rt-red").map((x) => x.runtimeInstanceId)).toEqual([
      "rt-red-a10",
      "rt-red-a11",
      "rt-red-a12",
    ]);
    expect(view.size).toBe(3 + 3);
    // The same roster as the unbounded fold, minus the dropped runtimes: none of them live.
    const full = await roster().current();
    expect(full.runtimes.size).toBe(13);
    for (const [id, s] of after.runtimes) expect(full.runtimes.get(id)).toEqual(s);
    expect(
      [...full.runtimes.values()].filter((s) => !after.runtimes.has(s.runtimeInstanceId)).every((s) => s.endedBy),
    ).toBe(true);
    // A restart from a snapshot of the bounded roster keeps the bound and the count of drops.
    const w = roster(withSnaps([], 3));
    await w.current();
    await w.writeSnapshot();
    const restored = roster(withSnaps([], 3));
    await restored.current();
    expect(text(restored)).toBe(text(w));
    expect(restored.dropped).toBe(w.dropped);
  });

  /** `count` runs of tenant `t-red`: submitted, every third also rejected (terminal), every fourth started. */
  async function runs(from: number, count: number) {
    for (let n = from; n < from + count; n++) {
      const id = `run-${n}`;
      const mk = (type: EventType, data: unknown) =>
        looseEvent(ctx("api"), type, data, { tenantId: "t-red", correlationId: id, causationId: "test" });
      const events = [mk("run.submitted", { sharedRunId: id, dag: exampleDag, source: "api", labels: {} })];
      if (n % 3 === 0) events.push(mk("run.rejected", { reason: { code: "tenant-quota-exceeded", detail: "test" } }));
      await store.appendAll(runRef("t-red", id), events, { expectedSeq: 0 });
    }
  }
  const openRuns = (snapshots?: { rejected: string[] }) =>
    startOpenRunsProjection(jetstream(fx.nc), fx.jsm, fx.layout, {
      ...(snapshots
        ? {
            snapshots: {
              store: snaps("api"),
              policy,
              log: quiet,
              clock: systemClock,
              onRejected: (r: string) => snapshots.rejected.push(r),
            },
          }
        : {}),
    });
  const counts = async (p: Awaited<ReturnType<typeof openRuns>>) => {
    const c = await p.claim("t-red", "probe", { maxOpenRuns: 5, maxQueuedRuns: 5 });
    c.release();
    return { open: c.openRuns, queued: c.queuedRuns, depths: await p.queueDepths() };
  };

  it("the api's open-runs view from a snapshot plus the tail counts what the fold from sequence 1 counts", async () => {
    await runs(0, 30);
    const first = await openRuns({ rejected: [] });
    await counts(first);
    await first.writeSnapshot();
    await first.stop();
    await runs(30, 7);
    const rejected: string[] = [];
    const fromSnap = await openRuns({ rejected });
    const full = await openRuns();
    try {
      expect(rejected).toEqual([]);
      const expected = 37 - Math.ceil(37 / 3);
      expect(await counts(fromSnap)).toEqual({ open: expected, queued: expected, depths: { "t-red": expected } });
      expect(await counts(full)).toEqual(await counts(fromSnap));
    } finally {
      await fromSnap.stop();
      await full.stop();
    }
  });

  it("an open-runs snapshot of another format version, or beyond the stream, is ignored and the fold from 1 counts right", async () => {
    await runs(0, 9);
    const last = (await fx.jsm.streams.info(fx.layout.eventStream)).state.last_seq;
    const body = new TextEncoder().encode(JSON.stringify({ kind: "api-open-runs/1", lastSeq: last, open: [] }));
    for (const [kind, seq, reason] of [
      ["api-open-runs/0", last, "kind"],
      ["api-open-runs/1", last + 50, "beyond-stream"],
      ["api-open-runs/1", last, "decode"],
    ] as const) {
      await snaps("api").write(kind, seq, body, new Date());
      const rejected: string[] = [];
      const p = await openRuns({ rejected });
      try {
        expect(rejected).toEqual([reason]);
        expect(await counts(p)).toEqual({ open: 6, queued: 6, depths: { "t-red": 6 } });
      } finally {
        await p.stop();
      }
    }
  });
});
