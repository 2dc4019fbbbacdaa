import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import { type NatsConnection } from "@nats-io/transport-node";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { redisCapacityView, type CapacityViewStore } from "../../platform/capacity-view.ts";
import { activeFollowers } from "../../platform/follow.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { startCapacityProjection } from "../../services/capacity/index.ts";
import {
  createEventStore,
  ensureStreams,
  heartbeatSubject,
  taggedLayout,
  type EventStore,
  type StreamLayout,
} from "../../streams/index.ts";
import { ids } from "../support/example-events.ts";
import { idleBeat } from "../support/idle-beat.ts";
import { uniqueName } from "../support/isolation.ts";
import { publishReadyRuntime } from "../support/ready-runtime.ts";
import { eventually } from "../support/streams.ts";

/**
 * The real view with the writes of `methods` counted since the last `shut`, and held while shut
 * (a slow Redis round trip) until `open`.
 */
function heldView(real: CapacityViewStore<CapacityDescriptor>, methods: readonly ("put" | "setCheckpoint")[]) {
  let writes = 0;
  let open = () => {};
  let gate: Promise<void> = Promise.resolve();
  const view: CapacityViewStore<CapacityDescriptor> = { ...real };
  for (const m of methods)
    (view as unknown as Record<string, unknown>)[m] = async (...args: unknown[]) => {
      await gate;
      writes++;
      return (real[m] as (...a: unknown[]) => Promise<unknown>).apply(real, args);
    };
  return {
    view,
    shut: () => {
      writes = 0;
      gate = new Promise((r) => (open = r));
    },
    open: () => open(),
    writes: () => writes,
  };
}

describe("capacity projection folds heartbeats and runtime events in batches (real nats-server and Redis)", () => {
  let nc: NatsConnection, js: JetStreamClient, redis: Redis, layout: StreamLayout, store: EventStore;
  beforeAll(async () => {
    nc = await connectHarness({ servers: inject("natsUrl") });
    js = jetstream(nc);
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1, db: 2 });
    layout = taggedLayout(uniqueName("capbatch"));
    await ensureStreams(await jetstreamManager(nc), layout);
    store = createEventStore(nc, layout);
  });
  afterAll(async () => {
    redis.disconnect();
    await nc.close();
  });

  /**
   * Waits until this process's follower of `stream` has handled every message stored there (taken
   * into the projection's pending batch): a state, where a fixed sleep was outlasted on a loaded machine.
   */
  async function handledAll(stream: string) {
    const last = (await (await jetstreamManager(nc)).streams.info(stream)).state.last_seq;
    await eventually(`the projection's follower past ${stream} ${last}`, async () =>
      activeFollowers().some((f) => f.stream === stream && f.handledSeq >= last) ? true : undefined,
    );
  }

  it("beats that arrive while a write is in flight are written once per runtime, not once per beat; the newest beat lands and a rebuild equals the view", async () => {
    const RTS = Array.from({ length: 20 }, (_, i) => `rt-batch-${i}`);
    const BEATS = 20;
    for (const rt of RTS) await publishReadyRuntime(store, rt);
    const real = redisCapacityView<CapacityDescriptor>(redis, ids.controlPlane);
    await real.clear();
    const held = heldView(real, ["put"]);
    const projection = await startCapacityProjection({ js, layout, view: held.view, controlPlaneId: ids.controlPlane });
    await projection.ready;
    held.shut();
    for (let n = 1; n <= BEATS; n++)
      await Promise.all(RTS.map((rt) => js.publish(heartbeatSubject(layout, rt), idleBeat(rt, n, new Date()))));
    // Every beat is in the stream; the follower takes them all while the first write is held.
    await handledAll(layout.heartbeatStream);
    held.open();
    await eventually("every runtime's newest beat in the view", async () => {
      for (const rt of RTS) if ((await real.get(rt))?.beats[ids.host]?.beat !== BEATS) return undefined;
      return true;
    });
    // One write per beat would be RTS × BEATS = 400; batched, about one per runtime after the held one.
    expect(held.writes()).toBeLessThanOrEqual(3 * RTS.length);
    const before = await real.all();
    await projection.rebuild();
    expect(await real.all()).toEqual(before);
    await projection.stop();
  });

  it("runtime events that arrive while a write is in flight are written once per runtime and one checkpoint, not two writes per event; a rebuild equals the view", async () => {
    const RTS = Array.from({ length: 20 }, (_, i) => `rt-evbatch-${i}`);
    const real = redisCapacityView<CapacityDescriptor>(redis, `${ids.controlPlane}-ev`);
    await real.clear();
    const held = heldView(real, ["put", "setCheckpoint"]);
    const projection = await startCapacityProjection({ js, layout, view: held.view, controlPlaneId: ids.controlPlane });
    await projection.ready;
    // The first runtime's first event takes the queue and is held there; the rest arrive meanwhile.
    held.shut();
    await Promise.all(RTS.map((rt) => publishReadyRuntime(store, rt)));
    const last = (await (await jetstreamManager(nc)).streams.info(layout.eventStream)).state.last_seq;
    await handledAll(layout.eventStream);
    held.open();
    await eventually("every runtime ready in the view and the checkpoint at the last event", async () => {
      for (const rt of RTS) if ((await real.get(rt))?.status !== "ready") return undefined;
      return (await real.getCheckpoint("runtime-events")) === last || undefined;
    });
    // Two writes per event would be 2 × 20 runtimes × 5 events = 200; batched, about one per runtime.
    expect(held.writes()).toBeLessThanOrEqual(3 * RTS.length);
    const before = await real.all();
    await projection.rebuild();
    expect(await real.all()).toEqual(before);
    await projection.stop();
  });
});
