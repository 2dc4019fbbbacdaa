/**
 * Event-store append throughput against a private nats-server (run with tsx: `make bench`).
 *
 *  - jetstream_publish_ceiling: raw acknowledged publishes of the same bytes to a stream with
 *    DROVER's settings, pipelined (a window of in-flight publishes): what JetStream itself allows.
 *  - append_sequential: one OCC append at a time on one aggregate (await each): the latency floor.
 *  - step_checkpoints: OCC `exec.step-completed` appends across many concurrent executions, each
 *    chaining on its own previous append, as runtimes checkpoint steps.
 *  - checkpoint_efficiency: step_checkpoints / jetstream_publish_ceiling, same run.
 * Medians of ROUNDS rounds, each on a fresh stream.
 */
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { type NatsConnection } from "@nats-io/transport-node";
import { connectHarness } from "../platform/nats-auth/server-keys.ts";
import { EventId, encodeEvent, type DroverEvent } from "../contracts/index.ts";
import { ensureStreams } from "../streams/ensure-streams.ts";
import { createEventStore } from "../streams/event-store.ts";
import { taggedLayout, type StreamLayout } from "../streams/layout.ts";
import { execRef, eventSubject } from "../streams/subjects.ts";
import { exampleEvent, ids } from "../test/support/example-events.ts";
import { startNats } from "../platform/local-servers.ts";
import { median, quantile, recordMetrics, round, type Metric } from "./support/results.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CEILING_MSGS = 20_000;
const CEILING_WINDOW = 256;
const SEQUENTIAL_APPENDS = 2_000;
const EXECUTIONS = 200;
const STEPS_PER_EXECUTION = 50;

let n = 0;
const stepEvent = (): DroverEvent => ({
  ...exampleEvent("exec.step-completed"),
  eventId: EventId.parse(`ev-bench-${++n}`),
});

async function freshLayout(jsm: JetStreamManager, round: number, name: string): Promise<StreamLayout> {
  const layout = taggedLayout(`bench-${name}-${round}`);
  await ensureStreams(jsm, layout);
  return layout;
}

async function dropLayout(jsm: JetStreamManager, layout: StreamLayout): Promise<void> {
  for (const s of [layout.eventStream, layout.heartbeatStream, layout.deadLetterStream])
    await jsm.streams.delete(s).catch(() => undefined);
}

/** Raw pipelined publishes of a real encoded event: a window of in-flight acknowledged publishes. */
async function ceiling(nc: NatsConnection, layout: StreamLayout): Promise<number> {
  const js = jetstream(nc);
  const data = encodeEvent(stepEvent());
  const subject = eventSubject(layout, execRef(ids.tenant, "ex-ceiling"), "exec.step-completed");
  const t0 = performance.now();
  let sent = 0;
  const worker = async () => {
    while (sent < CEILING_MSGS) {
      sent++;
      await js.publish(subject, data);
    }
  };
  await Promise.all(Array.from({ length: CEILING_WINDOW }, worker));
  return CEILING_MSGS / ((performance.now() - t0) / 1000);
}

async function sequential(nc: NatsConnection, layout: StreamLayout): Promise<{ rate: number; lat: number[] }> {
  const store = createEventStore(nc, layout);
  const ref = execRef(ids.tenant, "ex-seq");
  const lat: number[] = [];
  let expected = 0;
  const t0 = performance.now();
  for (let i = 0; i < SEQUENTIAL_APPENDS; i++) {
    const s = performance.now();
    expected = (await store.append(ref, stepEvent(), { expectedSeq: expected })).seq;
    lat.push(performance.now() - s);
  }
  return { rate: SEQUENTIAL_APPENDS / ((performance.now() - t0) / 1000), lat };
}

async function stepCheckpoints(nc: NatsConnection, layout: StreamLayout): Promise<{ rate: number; lat: number[] }> {
  const store = createEventStore(nc, layout);
  const lat: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: EXECUTIONS }, async (_, x) => {
      const ref = execRef(ids.tenant, `ex-${x}`);
      let expected = 0;
      for (let i = 0; i < STEPS_PER_EXECUTION; i++) {
        const s = performance.now();
        expected = (await store.append(ref, stepEvent(), { expectedSeq: expected })).seq;
        lat.push(performance.now() - s);
      }
    }),
  );
  return { rate: (EXECUTIONS * STEPS_PER_EXECUTION) / ((performance.now() - t0) / 1000), lat };
}

async function main(): Promise<void> {
  const server = await startNats();
  const nc = await connectHarness({ servers: server.url });
  try {
    const jsm = await jetstreamManager(nc);
    const ceilings: number[] = [],
      seqRates: number[] = [],
      seqLat: number[] = [],
      stepRates: number[] = [],
      stepLat: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      let layout = await freshLayout(jsm, r, "ceiling");
      ceilings.push(await ceiling(nc, layout));
      await dropLayout(jsm, layout);
      layout = await freshLayout(jsm, r, "seq");
      const s = await sequential(nc, layout);
      seqRates.push(s.rate);
      seqLat.push(...s.lat);
      await dropLayout(jsm, layout);
      layout = await freshLayout(jsm, r, "steps");
      const c = await stepCheckpoints(nc, layout);
      stepRates.push(c.rate);
      stepLat.push(...c.lat);
      await dropLayout(jsm, layout);
      console.log(
        `[bench] round ${r + 1}/${ROUNDS}: ceiling ${ceilings.at(-1)!.toFixed(0)}/s, sequential ${s.rate.toFixed(0)}/s, step_checkpoints ${c.rate.toFixed(0)}/s`,
      );
    }
    const ceilingMedian = median(ceilings),
      stepMedian = median(stepRates);
    const metrics: Record<string, Metric> = {
      jetstream_publish_ceiling: {
        unit: "events/s",
        value: round(ceilingMedian, 0),
        note: `${CEILING_MSGS} publishes, ${CEILING_WINDOW} in flight, median of ${ROUNDS}`,
      },
      append_sequential: {
        unit: "events/s",
        value: round(median(seqRates), 0),
        p50: round(quantile(seqLat, 0.5), 3),
        p99: round(quantile(seqLat, 0.99), 3),
        note: "one OCC append at a time on one aggregate; p50/p99 are per-append ms",
      },
      step_checkpoints: {
        unit: "events/s",
        value: round(stepMedian, 0),
        p50: round(quantile(stepLat, 0.5), 3),
        p99: round(quantile(stepLat, 0.99), 3),
        note: `${EXECUTIONS} executions x ${STEPS_PER_EXECUTION} chained OCC appends, concurrent; p50/p99 are per-append ms`,
      },
      checkpoint_efficiency: { unit: "ratio", value: round(stepMedian / ceilingMedian, 3) },
    };
    await recordMetrics(metrics, { nats: nc.info?.version ?? "unknown" });
    console.log(JSON.stringify(metrics, null, 2));
  } finally {
    await nc.close();
    await server.stop();
  }
}

await main();
