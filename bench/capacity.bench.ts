/**
 * capacity_fold: rebuilding the capacity view from stream sequence 1, against a private nats-server
 * and Redis (run with tsx: `make bench`). RUNTIMES runtimes, each with its provisioner events
 * (registered → host-started → readiness-layer-passed → endpoint-published → capacity-published) and
 * one heartbeat; the projection's rebuild() is timed (events folded and written to the Redis view
 * per second). capacity_fold_pure is the same events through the pure fold alone, in memory.
 * Medians of ROUNDS rounds.
 */
import { jetstream } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { Heartbeat, RuntimeInstanceId, type DroverEvent, type EventType } from "../contracts/index.ts";
import type { CapacityDescriptor } from "../aggregates/capacity/descriptor.ts";
import { evolveCapacity, type CapacityInput, type RuntimeEvent } from "../aggregates/capacity/fold.ts";
import { redisCapacityView } from "../platform/capacity-view.ts";
import { startCapacityProjection } from "../services/capacity/index.ts";
import { createEventStore, heartbeatSubject, runtimeRef } from "../streams/index.ts";
import { EXAMPLE_BUILDERS, ids } from "../test/support/example-events.ts";
import { freshStreams } from "../test/support/streams.ts";
import { startNats, startRedis } from "../platform/local-servers.ts";
import { median, recordMetrics, round } from "./support/results.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const RUNTIMES = Number(process.env.BENCH_RUNTIMES ?? 300);
const READY: EventType[] = [
  "runtime.registered",
  "runtime.host-started",
  "runtime.readiness-layer-passed",
  "runtime.endpoint-published",
  "runtime.capacity-published",
];

const [nats, redisServer] = await Promise.all([startNats(), startRedis()]);
const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 1 });
try {
  const fx = await freshStreams(nats.url, "benchcap");
  const store = createEventStore(fx.nc, fx.layout);
  const js = jetstream(fx.nc);
  const inputs: CapacityInput[] = [];
  for (let r = 0; r < RUNTIMES; r++) {
    const rt = RuntimeInstanceId.parse(`rt-bench-cap-${r}`);
    let seq = 0;
    for (const t of READY) {
      const e = EXAMPLE_BUILDERS[t]() as DroverEvent;
      const event = { ...e, eventId: `${e.eventId}-${r}` } as DroverEvent;
      seq = (await store.append(runtimeRef(rt), event, { expectedSeq: seq })).seq;
      inputs.push({ kind: "event", seq, runtimeInstanceId: rt, event: event as RuntimeEvent });
    }
    const beat = Heartbeat.parse({
      type: "heartbeat",
      runtimeInstanceId: rt,
      hostIncarnation: ids.host,
      beat: 1,
      at: new Date().toISOString(),
      workers: 2,
      activeWorkers: 0,
      availableWorkers: 2,
      queuedRuns: 0,
      runningRuns: 0,
      availableSlots: 4,
      paused: false,
      draining: false,
    });
    await js.publish(heartbeatSubject(fx.layout, rt), JSON.stringify(beat));
    inputs.push({ kind: "heartbeat", beat });
  }
  const total = inputs.length;
  const view = redisCapacityView<CapacityDescriptor>(redis, ids.controlPlane);
  const projection = await startCapacityProjection({ js, layout: fx.layout, view, controlPlaneId: ids.controlPlane });
  await projection.ready;
  const rates: number[] = [];
  for (let k = 0; k < ROUNDS; k++) {
    const t0 = performance.now();
    await projection.rebuild();
    const ms = performance.now() - t0;
    const folded = (await view.all()).length;
    if (folded !== RUNTIMES) throw new Error(`rebuild folded ${folded} runtimes, expected ${RUNTIMES}`);
    rates.push(total / (ms / 1000));
    console.log(`round ${k + 1}: ${total} inputs (${RUNTIMES} runtimes) in ${round(ms, 0)} ms`);
  }
  await projection.stop();
  const pure: number[] = [];
  for (let k = 0; k < ROUNDS; k++) {
    const t0 = performance.now();
    const m = new Map<string, CapacityDescriptor>();
    for (const i of inputs) {
      const id = i.kind === "event" ? i.runtimeInstanceId : i.beat.runtimeInstanceId;
      m.set(id, evolveCapacity(m.get(id), i));
    }
    pure.push(total / ((performance.now() - t0) / 1000));
  }
  const metrics = {
    capacity_fold: {
      unit: "events/s",
      value: round(median(rates), 0),
      note: `rebuild of the Redis capacity view from sequence 1: ${RUNTIMES} runtimes × ${READY.length} events + 1 heartbeat each; median of ${ROUNDS}`,
    },
    capacity_fold_pure: {
      unit: "events/s",
      value: round(median(pure), 0),
      note: "the same inputs through the pure fold in memory (no NATS, no Redis)",
    },
  };
  console.log(JSON.stringify(metrics, null, 2));
  await recordMetrics(metrics);
  await fx.close();
} finally {
  redis.disconnect();
  await Promise.all([nats.stop(), redisServer.stop()]);
}
