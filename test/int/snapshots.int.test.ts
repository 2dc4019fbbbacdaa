import { createHash } from "node:crypto";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { DroverConfig, type DroverEvent } from "../../contracts/index.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { randomIds, systemClock, type EnvelopeContext } from "../../platform/envelope.ts";
import { follow } from "../../platform/follow.ts";
import { redisReservations } from "../../platform/reservations.ts";
import { restoreFromSnapshot, snapshotWriter, type Snapshottable } from "../../platform/snapshots/snapshotted.ts";
import {
  createSnapshotStore,
  snapshotPrefixOf,
  snapshotStreamConfig,
  snapshotStreamOf,
  type SnapshotStore,
} from "../../platform/snapshots/store.ts";
import { RunIndex, startAdmission, verifyRuns } from "../../services/admission/index.ts";
import { RecoveryState, recoveryEventFilters, startRecovery } from "../../services/recovery/index.ts";
import { createEventStore, runRef, runtimeRef, type EventStore } from "../../streams/index.ts";
import { exampleDag, exampleEvent } from "../support/example-events.ts";
import { uniqueName } from "../support/isolation.ts";
import { looseEvent } from "../support/loose-event.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * Start-up from snapshots against a real nats-server (and Redis for the admission service): the
 * state restored from a snapshot plus the folded tail equals the fold from sequence 1; a snapshot
 * that fails its checksum, has another format version, or covers sequences the stream does not
 * hold is ignored (the fold starts from 1 and the state is still right).
 */
const CP = "cp-snap";
const config = DroverConfig.parse({
  controlPlaneId: CP,
  heartbeatIntervalMs: 300,
  dispatchTimeoutMs: 500,
  tenants: [{ tenantId: "t-red", isolationMode: "dedicated" }],
});
const producer: EnvelopeContext = {
  writer: { service: "api", instanceId: "api-1" },
  clock: systemClock,
  ids: randomIds,
};
const quiet = pino({ level: "silent" });

describe("snapshots (real NATS: the snapshot stream, the event stream, ordered consumers)", () => {
  let fx: StreamsFixture, js: JetStreamClient, store: EventStore;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "snp");
    js = jetstream(fx.nc);
    store = createEventStore(fx.nc, fx.layout);
    await fx.jsm.streams.add(snapshotStreamConfig(fx.layout));
  });
  afterEach(async () => {
    await fx.jsm.streams.delete(snapshotStreamOf(fx.layout)).catch(() => undefined);
    await fx.close();
  });

  /** `count` runs of t-red: submitted, and every `terminalEvery`-th also rejected (terminal). */
  async function runs(from: number, count: number, terminalEvery = 3) {
    await Promise.all(
      Array.from({ length: count }, (_, j) => {
        const id = `run-${from + j}`;
        const mk = (type: DroverEvent["type"], data: unknown) =>
          looseEvent(producer, type, data, { tenantId: "t-red", correlationId: id, causationId: "test" });
        const events = [mk("run.submitted", { sharedRunId: id, dag: exampleDag, source: "api", labels: {} })];
        if ((from + j) % terminalEvery === 0)
          events.push(mk("run.rejected", { reason: { code: "tenant-quota-exceeded", detail: "test" } }));
        return store.appendAll(runRef("t-red", id), events, { expectedSeq: 0 });
      }),
    );
  }
  async function runtimes(from: number, count: number) {
    const reg = exampleEvent("runtime.registered");
    for (let i = from; i < from + count; i++)
      await store.append(
        runtimeRef(`rt-snap-${i}`),
        looseEvent(
          { writer: { service: "provisioner", instanceId: "p-1" }, clock: systemClock, ids: randomIds },
          "runtime.registered",
          reg.data,
          { correlationId: `rt-snap-${i}`, causationId: "test" },
        ),
        { expectedSeq: 0 },
      );
  }

  /** Folds the stream into `state` from `fromSeq` until caught up; returns how many messages it folded. */
  async function fold(state: { apply(m: never): void }, filters: string[], fromSeq = 1, after?: (seq: number) => void) {
    let n = 0;
    const f = await follow(js, { stream: fx.layout.eventStream, filters, fromSeq }, (m) => {
      state.apply(m as never);
      after?.(m.seq);
      n++;
    });
    await f.caughtUp;
    await f.stop();
    return n;
  }
  const p = () => fx.layout.eventPrefix;
  const admissionFilters = () => [`${p()}.run.>`, `${p()}.scaleout.>`];
  const recoveryFilters = () => [`${p()}.run.>`, `${p()}.runtime.>`, `${p()}.forensics.>`];
  const newIndex = () => new RunIndex(p(), () => undefined, systemClock);
  const text = (s: Snapshottable) => new TextDecoder().decode(s.encode());

  /** Folds `state` from 1, writes its snapshot, appends a tail; returns the snapshot store. */
  async function snapshotThenTail(state: Snapshottable & { apply(m: never): void }, filters: string[], owner: string) {
    const snaps = createSnapshotStore(fx.nc, fx.layout, owner);
    const w = snapshotWriter(snaps, state, { everyEvents: 1e9, everyMs: 1e9 }, systemClock, {
      log: quiet,
      startSeq: 0,
    });
    await fold(state, filters, 1, (seq) => w.applied(seq));
    await w.flush();
    await w.stop();
    await runs(1000, 12);
    await runtimes(1000, 3);
    return snaps;
  }

  it("admission's run index from a snapshot plus the tail equals the fold from sequence 1, folding only the tail", async () => {
    await runs(0, 40);
    const snaps = await snapshotThenTail(newIndex(), admissionFilters(), "admission");
    const fromSnap = newIndex();
    const r = await restoreFromSnapshot(snaps, fromSnap, { log: quiet });
    expect(r.fromSeq).toBeGreaterThan(1);
    const tail = await fold(fromSnap, admissionFilters(), r.fromSeq);
    const full = newIndex();
    const all = await fold(full, admissionFilters());
    expect(tail).toBe(12 + 4); // 12 submitted + 4 rejected (run-1002, 1005, 1008, 1011)
    expect(all).toBeGreaterThan(tail);
    expect(text(fromSnap)).toBe(text(full));
    expect(fromSnap.pending().length).toBe(full.pending().length);
    expect(fromSnap.activeCount("t-red")).toBe(full.activeCount("t-red"));
  });

  it("recovery's state from a snapshot plus the tail equals the fold from sequence 1", async () => {
    await runs(0, 30);
    await runtimes(0, 5);
    const mk = () => new RecoveryState(p(), () => undefined);
    const snaps = await snapshotThenTail(mk(), recoveryFilters(), "recovery");
    const fromSnap = mk();
    const r = await restoreFromSnapshot(snaps, fromSnap, { log: quiet });
    expect(r.restoredSeq).toBeGreaterThan(0);
    const tail = await fold(fromSnap, recoveryFilters(), r.fromSeq);
    const full = mk();
    expect(tail).toBe(12 + 4 + 3);
    expect(await fold(full, recoveryFilters())).toBe(30 + 10 + 5 + tail);
    expect(text(fromSnap)).toBe(text(full));
    expect(fromSnap.runtimes.size).toBe(8);
  });

  /** Writes a snapshot of a fold of the stream, then spoils it with `spoil`; the restore must ignore it. */
  async function ignored(spoil: (snaps: SnapshotStore, good: RunIndex) => Promise<void>) {
    await runs(0, 20);
    const good = newIndex();
    const snaps = await snapshotThenTail(good, admissionFilters(), "admission");
    await spoil(snaps, good);
    const reasons: string[] = [];
    const fromSnap = newIndex();
    const r = await restoreFromSnapshot(snaps, fromSnap, { log: quiet, onRejected: (x) => reasons.push(x) });
    expect(r).toEqual({ fromSeq: 1 });
    expect(fromSnap.runs.size).toBe(0);
    await fold(fromSnap, admissionFilters(), r.fromSeq);
    const full = newIndex();
    await fold(full, admissionFilters());
    expect(text(fromSnap)).toBe(text(full));
    return reasons;
  }

  it("a snapshot whose chunk fails its sha256 is ignored (logged, counted) and the fold from 1 gives the right state", async () => {
    const reasons = await ignored(async () => {
      const head = await fx.jsm.direct.getMessage(snapshotStreamOf(fx.layout), {
        last_by_subj: `${snapshotPrefixOf(fx.layout)}.admission.head`,
      });
      const slot = (head!.json() as { slot: string }).slot;
      await js.publish(`${snapshotPrefixOf(fx.layout)}.admission.${slot}.0`, new Uint8Array([1, 2, 3, 4]));
    });
    expect(reasons).toEqual(["checksum"]);
  });

  it("a snapshot of another format version is ignored", async () => {
    const reasons = await ignored(async (snaps, good) => {
      await snaps.write("admission-run-index/0", 3, good.encode(), new Date());
    });
    expect(reasons).toEqual(["kind"]);
  });

  it("a snapshot covering sequences the stream does not hold is not trusted beyond the stream", async () => {
    const reasons = await ignored(async (snaps, good) => {
      const last = (await fx.jsm.streams.info(fx.layout.eventStream)).state.last_seq;
      await snaps.write(good.kind, last + 1_000, good.encode(), new Date());
    });
    expect(reasons).toEqual(["beyond-stream"]);
  });

  it("a terminal run dropped from memory that comes back (a producer's duplicate submission) is read from the log and never pending again", async () => {
    await runs(0, 6);
    const index = newIndex();
    index.maxTerminalRuns = 0;
    await fold(index, admissionFilters());
    expect(index.get("t-red", "run-0")).toBeUndefined();
    // A trusted producer publishes straight to JetStream: nothing stops a second submission.
    const dup = looseEvent(
      producer,
      "run.submitted",
      { sharedRunId: "run-0", dag: exampleDag, source: "api", labels: {} },
      { tenantId: "t-red", correlationId: "run-0", causationId: "dup" },
    );
    await js.publish(`${p()}.run.t-red.run-0.submitted`, JSON.stringify(dup));
    await runs(100, 1);
    await fold(index, admissionFilters(), (await fx.jsm.streams.info(fx.layout.eventStream)).state.last_seq - 2);
    expect(index.get("t-red", "run-0")?.state.status).toBe("submitted");
    // run-100 was appended as its run's first event (expected last subject sequence 0, in the stored
    // headers): new for sure, pending at once. run-0's duplicate carries no such proof: read first.
    expect(index.pending().map((r) => r.sharedRunId)).toEqual(["run-1", "run-2", "run-4", "run-5", "run-100"]);
    expect(index.unverified().map((r) => r.sharedRunId)).toEqual(["run-0"]);
    expect(await verifyRuns(index, store)).toBe(1);
    // run-0's whole history: rejected, then the duplicate; it stays rejected (then leaves memory again).
    expect(index.get("t-red", "run-0")).toBeUndefined();
    expect(index.pending().map((r) => r.sharedRunId)).toEqual(["run-1", "run-2", "run-4", "run-5", "run-100"]);
  });

  it("recovery started on a snapshot reports ready with the state of the fold from sequence 1", async () => {
    await runs(0, 24);
    await runtimes(0, 4);
    const mk = () => new RecoveryState(p(), () => undefined);
    // The service folds what it follows (recoveryEventFilters): the snapshot and the reference fold do too.
    const snaps = await snapshotThenTail(mk(), recoveryEventFilters(fx.layout), "recovery");
    const full = mk();
    await fold(full, recoveryEventFilters(fx.layout));
    const state = mk();
    const rejected: string[] = [];
    const s = await startRecovery({
      js,
      config,
      layout: fx.layout,
      store,
      state,
      env: { writer: { service: "recovery", instanceId: uniqueName("rec") }, clock: systemClock, ids: randomIds },
      hosts: () => undefined,
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: quiet,
      tickMs: 50,
      snapshots: { store: snaps, onRejected: (x) => rejected.push(x) },
    });
    try {
      await s.ready;
      expect(rejected).toEqual([]);
      expect(text(state)).toBe(text(full));
    } finally {
      await s.stop();
    }
  });

  it("admission started on a snapshot decides nothing before the tail is folded, and then holds every run", async () => {
    const redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1, db: 11 });
    try {
      await runs(0, 30);
      const snaps = await snapshotThenTail(newIndex(), admissionFilters(), "admission");
      const full = newIndex();
      await fold(full, admissionFilters());
      const index = newIndex();
      const firstAppendSaw: number[] = [];
      const watched: EventStore = {
        ...store,
        append: (...a) => (firstAppendSaw.push(index.runs.size), store.append(...a)),
        appendAll: (...a) => (firstAppendSaw.push(index.runs.size), store.appendAll(...a)),
        appendAtomic: (...a) => (firstAppendSaw.push(index.runs.size), store.appendAtomic(...a)),
      };
      const rejected: string[] = [];
      const s = await startAdmission({
        js,
        config,
        layout: fx.layout,
        store: watched,
        index,
        view: redisCapacityView<CapacityDescriptor>(redis, `${CP}-${uniqueName("v")}`),
        reservations: redisReservations(redis, `${CP}-${uniqueName("r")}`),
        env: { writer: { service: "admission", instanceId: uniqueName("adm") }, clock: systemClock, ids: randomIds },
        send: () => Promise.reject(new Error("no runtime in this test")),
        commandTokenFor: () => "token",
        sha256: (x) => createHash("sha256").update(x).digest("hex"),
        log: quiet,
        tickMs: 50,
        snapshots: { store: snaps, onRejected: (x) => rejected.push(x) },
      });
      try {
        await s.ready;
        expect(rejected).toEqual([]);
        expect(index.runs.size).toBe(full.runs.size);
        for (const [k, r] of full.runs) expect(index.runs.get(k)?.state.submittedSeq).toBe(r.state.submittedSeq);
        await s.nextPass();
        await eventually("a decision", async () => (firstAppendSaw.length > 0 ? true : undefined));
        expect(Math.min(...firstAppendSaw)).toBe(full.runs.size);
      } finally {
        await s.stop();
      }
    } finally {
      redis.disconnect();
    }
  });
});
