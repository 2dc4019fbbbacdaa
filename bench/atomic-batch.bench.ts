/**
 * What an atomic batch costs against conditional appends one after another (run with tsx), on a
 * private nats-server with DROVER's stream settings (R1, file storage, `allow_atomic`): per pair of
 * events on two aggregates, p50 over PAIRS pairs each of
 *  - `append_pair_sequential_ms`: two conditional appends, the second after the first's ack;
 *  - `atomic_batch_pair_ms`: the same two events as one atomic batch (streams/atomic-append.ts).
 * nats-server stages an R1 file stream's atomic batch in a file store of its own that it syncs at
 * the commit (server/jetstream_batching.go `newBatchStore`, SyncOnFlush): a batch costs an fsync of
 * the store's disk, where an append is not synced. `NATS_STORE_DIR` puts the store elsewhere (a
 * tmpfs shows the cost without the disk's sync). Then prints the wall time of BENCH_CONCURRENT
 * (default 20) batches sent at once against as many pairs of appends at once.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { EventId, type DroverEvent, type EventType } from "../contracts/index.ts";
import { startNats } from "../platform/local-servers.ts";
import { connectHarness } from "../platform/nats-auth/server-keys.ts";
import { ensureStreams } from "../streams/ensure-streams.ts";
import { createEventStore } from "../streams/event-store.ts";
import { taggedLayout } from "../streams/layout.ts";
import { execRef, runRef } from "../streams/subjects.ts";
import { exampleEvent, ids } from "../test/support/example-events.ts";
import { quantile, recordMetrics, round } from "./support/results.ts";

const PAIRS = Number(process.env.BENCH_PAIRS ?? 200);
let n = 0;
const ev = (type: EventType): DroverEvent =>
  ({ ...exampleEvent(type), eventId: EventId.parse(`ev-batch-${++n}`) }) as DroverEvent;

const storeDir = process.env.NATS_STORE_DIR;
const nats = await startNats(storeDir ? { storeDir } : {});
try {
  const nc = await connectHarness({ servers: nats.url });
  const layout = taggedLayout("bench-batch");
  await ensureStreams(await jetstreamManager(nc), layout);
  const store = createEventStore(nc, layout);
  const sequential: number[] = [];
  const batched: number[] = [];
  // Alternated pair by pair, each on fresh aggregates, so both see the same load and stream size.
  for (let i = 0; i < PAIRS; i++) {
    const [r1, e1, r2, e2] = [runRef(ids.tenant, `run-s${i}`), execRef(ids.tenant, `ex-s${i}`)].concat([
      runRef(ids.tenant, `run-b${i}`),
      execRef(ids.tenant, `ex-b${i}`),
    ]);
    let t = performance.now();
    await store.append(r1!, ev("run.submitted"), { expectedSeq: 0 });
    await store.append(e1!, ev("exec.started"), { expectedSeq: 0 });
    sequential.push(performance.now() - t);
    t = performance.now();
    await store.appendAtomic([
      { ref: r2!, expectedSeq: 0, events: [ev("run.submitted")] },
      { ref: e2!, expectedSeq: 0, events: [ev("exec.started")] },
    ]);
    batched.push(performance.now() - t);
  }
  // At once, as in a recovery burst: CONCURRENT batches against as many pairs of appends (wall time
  // of each round; nats-server commits a stream's batches one at a time, each with its sync).
  const concurrent = Number(process.env.BENCH_CONCURRENT ?? 20);
  for (const shape of ["batches", "append pairs"] as const) {
    const t = performance.now();
    await Promise.all(
      Array.from({ length: concurrent }, async (_, i) => {
        const [r, e] = [runRef(ids.tenant, `run-c${shape[0]}${i}`), execRef(ids.tenant, `ex-c${shape[0]}${i}`)];
        if (shape === "batches")
          await store.appendAtomic([
            { ref: r, expectedSeq: 0, events: [ev("run.submitted")] },
            { ref: e, expectedSeq: 0, events: [ev("exec.started")] },
          ]);
        else {
          await store.append(r, ev("run.submitted"), { expectedSeq: 0 });
          await store.append(e, ev("exec.started"), { expectedSeq: 0 });
        }
      }),
    );
    console.log(`${concurrent} ${shape} at once: ${round(performance.now() - t, 1)} ms wall`);
  }
  const note = (what: string) =>
    `${what}, one run and one execution event, p50 over ${PAIRS} pairs alternated with the other shape; store ${storeDir ?? "a temporary directory"}`;
  const metrics = {
    append_pair_sequential_ms: {
      unit: "ms",
      value: round(quantile(sequential, 0.5), 3),
      p99: round(quantile(sequential, 0.99), 3),
      note: note("two conditional appends one after the other"),
    },
    atomic_batch_pair_ms: {
      unit: "ms",
      value: round(quantile(batched, 0.5), 3),
      p99: round(quantile(batched, 0.99), 3),
      note: note("the same two events as one atomic batch"),
    },
  };
  console.log(JSON.stringify(metrics, null, 2));
  if (!storeDir) await recordMetrics(metrics);
  await nc.close();
} finally {
  await nats.stop();
}
