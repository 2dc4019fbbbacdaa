import { jetstream } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { inject } from "vitest";
import type { DroverEvent } from "../../contracts/index.ts";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { startCapacityProjection, type CapacityProjection } from "../../services/capacity/index.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { createEventStore, runRef, type EventStore } from "../../streams/index.ts";
import { looseEvent } from "./loose-event.ts";
import { freshStreams, type StreamsFixture } from "./streams.ts";

/** What admission's placement-order int tests stand on: fresh streams, a flushed Redis db, the real capacity projection. */
export interface CapacityGround {
  readonly fx: StreamsFixture;
  readonly store: EventStore;
  readonly redis: Redis;
  readonly capacity: CapacityProjection;
  close(): Promise<void>;
}

/**
 * `redisDb` is the test file's own: int runs two files at once and each flushes its db, so two files
 * sharing one wipe each other's capacity view mid-test.
 */
export async function capacityGround(
  streamPrefix: string,
  controlPlaneId: string,
  redisDb: number,
): Promise<CapacityGround> {
  const fx = await freshStreams(inject("natsUrl"), streamPrefix);
  const store = createEventStore(fx.nc, fx.layout);
  const redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1, db: redisDb });
  await redis.flushdb();
  const capacity = await startCapacityProjection({
    js: jetstream(fx.nc),
    layout: fx.layout,
    view: redisCapacityView<CapacityDescriptor>(redis, controlPlaneId),
    controlPlaneId,
  });
  return {
    fx,
    store,
    redis,
    capacity,
    async close() {
      await capacity.stop();
      redis.disconnect();
      await fx.close();
    },
  };
}

/** The writer context of a test acting as `service`. */
export const actingAs = (service: "api" | "recovery" | "provisioner") => ({
  writer: { service, instanceId: `${service}-1` },
  clock: systemClock,
  ids: randomIds,
});

/** Appends one event to a run's stream after whatever it holds, written as `service`. */
export async function appendRunEvent(
  store: EventStore,
  service: "api" | "recovery",
  tenantId: string,
  id: string,
  type: DroverEvent["type"],
  data: unknown,
): Promise<void> {
  const ref = runRef(tenantId, id);
  await store.append(
    ref,
    looseEvent(actingAs(service), type, data, { tenantId, correlationId: id, causationId: "test" }),
    { expectedSeq: await store.lastSeq(ref) },
  );
}
