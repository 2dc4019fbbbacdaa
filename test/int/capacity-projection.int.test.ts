import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import { type NatsConnection } from "@nats-io/transport-node";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DroverEvent, EventType } from "../../contracts/index.ts";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { routability } from "../../aggregates/capacity/routability.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { startCapacityProjection } from "../../services/capacity/index.ts";
import {
  createEventStore,
  ensureStreams,
  heartbeatSubject,
  readDeadLetters,
  runtimeRef,
  skipRecorder,
  taggedLayout,
  type EventStore,
  type StreamLayout,
} from "../../streams/index.ts";
import { EXAMPLE_BUILDERS, ids } from "../support/example-events.ts";
import { idleBeat } from "../support/idle-beat.ts";
import { uniqueName } from "../support/isolation.ts";
import { eventually } from "../support/streams.ts";

const CP = ids.controlPlane;

/** Publishes the provisioner's events for one runtime, each conditional on the previous. */
async function publishRuntime(store: EventStore, rt: string, types: EventType[]) {
  let seq = await store.lastSeq(runtimeRef(rt));
  for (const t of types) {
    const e = EXAMPLE_BUILDERS[t]() as DroverEvent;
    const event = { ...e, eventId: `${e.eventId}-${rt}`.slice(0, 63) } as DroverEvent;
    seq = (await store.append(runtimeRef(rt), event, { expectedSeq: seq })).seq;
  }
}

const beat = idleBeat;

describe("capacity projection (real nats-server and Redis)", () => {
  let nc: NatsConnection, js: JetStreamClient, redis: Redis, layout: StreamLayout, store: EventStore;
  const READY: EventType[] = [
    "runtime.registered",
    "runtime.host-started",
    "runtime.readiness-layer-passed",
    "runtime.endpoint-published",
    "runtime.capacity-published",
  ];

  beforeAll(async () => {
    nc = await connectHarness({ servers: inject("natsUrl") });
    js = jetstream(nc);
    // A Redis database of its own, so flushing it cannot touch other tests' keys.
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1, db: 7 });
    layout = taggedLayout(uniqueName("cap"));
    await ensureStreams(await jetstreamManager(nc), layout);
    store = createEventStore(nc, layout);
  });
  afterAll(async () => {
    redis.disconnect();
    await nc.close();
  });

  /** Each runtime's provisioner events and one heartbeat. */
  const readyWithBeat = async (rts: readonly string[]) => {
    for (const rt of rts) {
      await publishRuntime(
        store,
        rt,
        READY.map((t) => t),
      );
      await js.publish(heartbeatSubject(layout, rt), beat(rt, 1, new Date()));
    }
  };
  /** This control plane's projection, started and caught up, and the view it writes. */
  const startLive = async () => {
    const live = redisCapacityView<CapacityDescriptor>(redis, CP);
    const projection = await startCapacityProjection({ js, layout, view: live, controlPlaneId: CP });
    await projection.ready;
    return { live, projection };
  };

  it("folds runtime events and heartbeats into the Redis view, and a rebuild from sequence 1 after a Redis flush equals it", async () => {
    await readyWithBeat(["rt-cap-a", "rt-cap-b"]);
    const { live, projection } = await startLive();
    const before = await live.all();
    expect(before.map((d) => d.runtimeInstanceId)).toEqual(["rt-cap-a", "rt-cap-b"]);
    for (const d of before) {
      expect(routability(d, { now: Date.now(), staleMs: 30_000, reservedSlots: 0 }).reasons).not.toContain(
        "http-endpoint-missing",
      );
      expect(d.beats[ids.host]?.beat).toBe(1);
    }
    await redis.flushdb();
    await projection.rebuild();
    expect(await live.all()).toEqual(before);
    await projection.stop();
  });

  it("two concurrent rebuilds run one after another: both report the full fold, and after stop() nothing folds into the view any more (no leaked follower)", async () => {
    const { live, projection } = await startLive();
    const [a, b] = await Promise.all([projection.rebuild(), projection.rebuild()]);
    const lastSeq = Math.max(await store.lastSeq(runtimeRef("rt-cap-a")), await store.lastSeq(runtimeRef("rt-cap-b")));
    expect(a).toEqual({ eventsFolded: 2 * READY.length, lastSeq, heartbeatsFolded: 2 });
    expect(b).toEqual(a);
    await projection.stop();
    const ack = await js.publish(heartbeatSubject(layout, "rt-cap-a"), beat("rt-cap-a", 2, new Date()));
    expect(ack.seq).toBeGreaterThan(0);
    // A follower left running would fold beat 2 within milliseconds on loopback; give it ample time.
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await live.get("rt-cap-a"))?.beats[ids.host]?.beat).toBe(1);
  });

  it("a rebuild replaces the view at once: a reader polling throughout never sees it empty or partial, and a runtime dropped from Redis comes back", async () => {
    const rts = Array.from({ length: 40 }, (_, i) => `rt-cap-many-${String(i).padStart(2, "0")}`);
    await readyWithBeat(rts);
    const { live, projection } = await startLive();
    const before = await live.all();
    expect(before).toHaveLength(rts.length + 2);
    await redis.del(`drover:${CP}:cap:rt:${rts[7]}`);
    const seen: number[] = [];
    let done = false;
    const rebuilt = projection.rebuild().finally(() => {
      done = true;
    });
    while (!done) seen.push((await live.all()).length);
    await rebuilt;
    // The dropped runtime's hash is gone until the swap: the old view shows one fewer, never 0 or a partial fold.
    expect(seen.length).toBeGreaterThan(0);
    expect(
      seen.filter((n) => n !== before.length - 1 && n !== before.length),
      `view sizes seen: ${[...new Set(seen)].join(",")}`,
    ).toEqual([]);
    expect(await live.all()).toEqual(before);
    await projection.stop();
  });

  it("keeps runtimes registered by another control plane out of this control plane's view (runs after runtimes exist)", async () => {
    const other = redisCapacityView<CapacityDescriptor>(redis, "cp-other");
    const projection = await startCapacityProjection({ js, layout, view: other, controlPlaneId: "cp-other" });
    await projection.ready;
    expect(await other.all()).toEqual([]);
    await projection.stop();
  });

  it("steps over garbage, an unknown event type and a heartbeat with an unexpected field, records each as a dead letter, and keeps folding (it used to exit)", async () => {
    const warned: number[] = [];
    const onSkip = skipRecorder(nc, layout, "capacity", { warn: (o) => warned.push((o as { seq: number }).seq) });
    const live = redisCapacityView<CapacityDescriptor>(redis, CP);
    const projection = await startCapacityProjection({ js, layout, view: live, controlPlaneId: CP, onSkip });
    await projection.ready;
    const bad = [
      await js.publish(`${layout.eventPrefix}.runtime.rt-cap-p.registered`, "not json"),
      await js.publish(
        `${layout.eventPrefix}.runtime.rt-cap-p.renamed`,
        JSON.stringify({ ...EXAMPLE_BUILDERS["runtime.draining"](), type: "runtime.renamed" }),
      ),
      await js.publish(heartbeatSubject(layout, "rt-cap-p"), "{}"),
      await js.publish(
        heartbeatSubject(layout, "rt-cap-q"),
        JSON.stringify({ ...JSON.parse(beat("rt-cap-q", 1, new Date())), extra: true }),
      ),
    ];
    await readyWithBeat(["rt-cap-p"]);
    // Events and heartbeats are two followers: the beat may be folded before `capacity-published`, so
    // wait for both (the test fails on the timeout if either never folds).
    const folded = await eventually("rt-cap-p folded after the garbage", async () =>
      (await live.all()).find(
        (d) => d.runtimeInstanceId === "rt-cap-p" && d.beats[ids.host]?.beat === 1 && d.status === "ready",
      ),
    );
    expect(folded.status).toBe("ready");
    expect(onSkip.count).toBe(4);
    // Two followers (events, heartbeats): each stream's skips in order, the streams interleaved.
    expect([...warned].sort((a, b) => a - b)).toEqual(bad.map((b) => b.seq).sort((a, b) => a - b));
    const letters = await eventually("dead letters recorded", async () => {
      const all = (await readDeadLetters(await jetstreamManager(nc), layout)).filter((d) => d.consumer === "capacity");
      return all.length === 4 ? all : undefined;
    });
    const streams = [layout.eventStream, layout.eventStream, layout.heartbeatStream, layout.heartbeatStream];
    const byStream = (x: { stream: string; seq: number }, y: { stream: string; seq: number }) =>
      x.stream.localeCompare(y.stream) || x.seq - y.seq;
    expect(letters.map((d) => ({ stream: d.stream, seq: d.streamSeq, kind: d.kind })).sort(byStream)).toEqual(
      bad.map((b, i) => ({ stream: streams[i]!, seq: b.seq, kind: "terminated" })).sort(byStream),
    );
    expect(letters.find((d) => d.streamSeq === bad[0]!.seq)!.reason).toMatch(/^skipped: .*not JSON/);
    await projection.stop();
  });

  it("a forged heartbeat (another runtime's id in its payload, a future timestamp, a huge beat) cannot touch another runtime's view nor push its own freshness: the runtime comes from the subject, the time from JetStream", async () => {
    await readyWithBeat(["rt-cap-f", "rt-cap-g"]);
    const { live, projection } = await startLive();
    await eventually("both beats folded", async () =>
      (await live.get("rt-cap-f"))?.beats[ids.host] && (await live.get("rt-cap-g"))?.beats[ids.host] ? true : undefined,
    );
    const future = new Date(Date.now() + 365 * 86_400_000);
    // On f's subject (what f's credentials allow): a payload naming g, far in the future, with a huge beat.
    const forged = await js.publish(heartbeatSubject(layout, "rt-cap-f"), beat("rt-cap-g", 1e12, future));
    // On f's own subject naming f: a future `at` and a huge beat (f can only harm itself).
    const own = await js.publish(heartbeatSubject(layout, "rt-cap-f"), beat("rt-cap-f", 1e12, future));
    const stored = await (await jetstreamManager(nc)).streams.getMessage(layout.heartbeatStream, { seq: own.seq });
    await eventually("f's own beat folded", async () =>
      (await live.get("rt-cap-f"))?.beats[ids.host]?.beat === 1e12 ? true : undefined,
    );
    const g = (await live.get("rt-cap-g"))!;
    expect(forged.seq).toBeLessThan(own.seq);
    expect(g.beats[ids.host]?.beat).toBe(1);
    const f = (await live.get("rt-cap-f"))!;
    // Its time is when the server stored it, never the writer's future `at`.
    expect(f.beats[ids.host]?.at).toBe(stored!.time.toISOString());
    // So staleness (routability's `now - at`) counts from the server's clock: the future `at` bought nothing.
    expect(Date.parse(f.beats[ids.host]!.at)).toBeLessThanOrEqual(Date.now());
    await projection.stop();
  });

  it("a restart goes on from the view's checkpoint and folds only the tail: a descriptor removed from Redis meanwhile stays removed (no fold from sequence 1, no snapshot needed)", async () => {
    // Last in this file: the runtimes it adds would change the counts of the tests before it.
    await readyWithBeat(["rt-cap-r1"]);
    const first = await startLive();
    expect((await first.live.all()).map((d) => d.runtimeInstanceId)).toContain("rt-cap-r1");
    const checkpoint = await first.live.getCheckpoint("runtime-events");
    expect(checkpoint).toBeGreaterThan(0);
    await first.projection.stop();
    // Behind the projection's back: only a fold from sequence 1 would write rt-cap-r1 again.
    await redis.del(`drover:${CP}:cap:rt:rt-cap-r1`);
    await redis.srem(`drover:${CP}:cap:index`, "rt-cap-r1");
    await readyWithBeat(["rt-cap-r2"]);
    const second = await startLive();
    try {
      const ids = (await second.live.all()).map((d) => d.runtimeInstanceId);
      expect(ids).toContain("rt-cap-r2");
      expect(ids).not.toContain("rt-cap-r1");
      expect(await second.live.getCheckpoint("runtime-events")).toBeGreaterThan(checkpoint);
    } finally {
      await second.projection.stop();
    }
  });
  it("keeps at most maxEnded fenced or retired descriptors in memory (the view keeps all, its live part leaves retired ones out); one dropped is read back from the view before a late event is folded into it", async () => {
    // A stream and view of its own (last in this file: the flush ends the other tests' view).
    await redis.flushdb();
    const own = taggedLayout(uniqueName("capb"));
    await ensureStreams(await jetstreamManager(nc), own);
    const ownStore = createEventStore(nc, own);
    for (const rt of ["rt-end-a", "rt-end-b", "rt-end-c"]) await publishRuntime(ownStore, rt, READY);
    for (const rt of ["rt-end-a", "rt-end-b"]) await publishRuntime(ownStore, rt, ["runtime.retired"]);
    const view = redisCapacityView<CapacityDescriptor>(redis, CP);
    const projection = await startCapacityProjection({ js, layout: own, view, controlPlaneId: CP, maxEnded: 1 });
    try {
      await projection.ready;
      expect(projection.memory()).toEqual({ cached: 2, dropped: 1 });
      expect((await view.all()).map((d) => [d.runtimeInstanceId, d.status])).toEqual([
        ["rt-end-a", "retired"],
        ["rt-end-b", "retired"],
        ["rt-end-c", "ready"],
      ]);
      // A late event of rt-end-a, which left memory: folded into its whole descriptor, not a bare one.
      await publishRuntime(ownStore, "rt-end-a", ["runtime.fenced"]);
      await eventually("the late event in the view", async () => (await view.get("rt-end-a"))?.incidentId);
      const a = await view.get("rt-end-a");
      expect(a?.registration?.controlPlaneId).toBe(CP);
      expect(a?.status).toBe("retired");
      expect(projection.memory().cached).toBe(2);
      // The same view as a rebuild from sequence 1 (which holds every descriptor until it swaps).
      const incremental = await view.all();
      await projection.rebuild();
      expect(await view.all()).toEqual(incremental);
      // What admission reads every pass: retired runtimes left out, after folds and after a rebuild,
      // and from a view written before the live set existed (its index read, retired ones filtered).
      const liveIds = async () => (await view.live()).map((d) => d.runtimeInstanceId);
      expect(await liveIds()).toEqual(["rt-end-c"]);
      await redis.del(`drover:${CP}:cap:live`);
      expect(await liveIds()).toEqual(["rt-end-c"]);
      expect(projection.memory().cached).toBe(2);
    } finally {
      await projection.stop();
    }
  });

  it("announces a runtime becoming ready and its incarnation's first beat to a watch, each readable in the view by then, and not its other events nor its later beats", async () => {
    const { live, projection } = await startLive();
    const seen: { id: string; d: CapacityDescriptor | undefined }[] = [];
    const watch = await live.watch!((id) => {
      if (id === "rt-cap-w") void live.get(id).then((d) => seen.push({ id, d }));
    });
    await publishRuntime(store, "rt-cap-w", READY);
    await eventually("capacity published", async () => (seen.some((s) => s.d?.status === "ready") ? true : undefined));
    await new Promise((r) => setTimeout(r, 100));
    const events = seen.length;
    expect(seen.map((x) => x.d?.status)).toEqual(["ready"]);
    await js.publish(heartbeatSubject(layout, "rt-cap-w"), beat("rt-cap-w", 1, new Date()));
    await eventually("first beat announced", async () => (seen.length > events ? true : undefined));
    await eventually("first beat readable", async () => (seen.at(-1)?.d?.beats[ids.host] ? true : undefined));
    await js.publish(heartbeatSubject(layout, "rt-cap-w"), beat("rt-cap-w", 2, new Date()));
    await eventually("second beat folded", async () =>
      (await live.get("rt-cap-w"))?.beats[ids.host]?.beat === 2 ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 100));
    expect(seen.length).toBe(events + 1);
    await watch.close();
    await projection.stop();
  });
});
