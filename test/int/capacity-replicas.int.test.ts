import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import { type NatsConnection } from "@nats-io/transport-node";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
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

const CP = ids.controlPlane;
const beat = idleBeat;

describe("capacity replicas share one Redis view (real nats-server and Redis)", () => {
  let nc: NatsConnection, js: JetStreamClient, redis: Redis, layout: StreamLayout, store: EventStore;
  beforeAll(async () => {
    nc = await connectHarness({ servers: inject("natsUrl") });
    js = jetstream(nc);
    // A Redis database of its own (no other test uses 3): flushing it touches nobody else.
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1, db: 3 });
    await redis.flushdb();
    layout = taggedLayout(uniqueName("capr"));
    await ensureStreams(await jetstreamManager(nc), layout);
    store = createEventStore(nc, layout);
  });
  afterAll(async () => {
    redis.disconnect();
    await nc.close();
  });

  it("a write older than the stored descriptor (an earlier event sequence, or the same one with an earlier beat) is refused; the checkpoint only moves forward", async () => {
    const view = redisCapacityView<{ n: number }>(redis, `${CP}-cas`);
    expect(await view.put("rt-x", { n: 1 }, [5, 100])).toBe(true);
    expect(await view.put("rt-x", { n: 2 }, [4, 900])).toBe(false);
    expect(await view.put("rt-x", { n: 3 }, [5, 50])).toBe(false);
    expect(await view.get("rt-x")).toEqual({ n: 1 });
    expect(await view.put("rt-x", { n: 4 }, [5, 100])).toBe(true);
    expect(await view.put("rt-x", { n: 5 }, [6, 0])).toBe(true);
    expect(await view.get("rt-x")).toEqual({ n: 5 });
    await view.setCheckpoint("c", 10);
    await view.setCheckpoint("c", 7);
    expect(await view.getCheckpoint("c")).toBe(10);
    await view.setCheckpoint("c", 12);
    expect(await view.getCheckpoint("c")).toBe(12);
  });

  it("two projections write the same view at once, the second started while the first is live: a reader never sees a beat go back, and the view ends equal to a single projection's fold", async () => {
    const rt = uniqueName("rt-rep");
    await publishReadyRuntime(store, rt);
    for (let n = 1; n <= 20; n++) await js.publish(heartbeatSubject(layout, rt), beat(rt, n));
    const view = redisCapacityView<CapacityDescriptor>(redis, CP);
    const one = await startCapacityProjection({ js, layout, view, controlPlaneId: CP });
    await one.ready;
    for (let n = 21; n <= 40; n++) await js.publish(heartbeatSubject(layout, rt), beat(rt, n));
    await eventually("the first replica folded beat 40", async () =>
      (await view.get(rt))?.beats[ids.host]?.beat === 40 ? true : undefined,
    );
    // A reader polling throughout: the beat it sees never goes back while the second replica replays.
    const seen: number[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) seen.push((await view.get(rt))?.beats[ids.host]?.beat ?? -1);
    })();
    // The second replica starts while the first is live (from the shared checkpoint, as a restarted replica does).
    const two = await startCapacityProjection({ js, layout, view, controlPlaneId: CP });
    for (let n = 41; n <= 60; n++) await js.publish(heartbeatSubject(layout, rt), beat(rt, n));
    await two.ready;
    await eventually("both replicas folded beat 60", async () =>
      (await view.get(rt))?.beats[ids.host]?.beat === 60 ? true : undefined,
    );
    polling = false;
    await poller;
    expect(seen.length).toBeGreaterThan(5);
    expect(
      seen.every((b, i) => b >= 40 && (i === 0 || b >= seen[i - 1]!)),
      seen.join(","),
    ).toBe(true);
    const shared = await view.get(rt);
    await one.stop();
    await two.stop();
    // A single projection folding everything alone gives the same descriptor.
    const alone = redisCapacityView<CapacityDescriptor>(redis, `${CP}-alone`);
    const three = await startCapacityProjection({ js, layout, view: alone, controlPlaneId: CP });
    await three.ready;
    expect(await alone.get(rt)).toEqual(shared);
    await three.stop();
  });
});
