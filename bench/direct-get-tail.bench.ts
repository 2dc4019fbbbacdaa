/**
 * An aggregate read's cost to nats-server in a big stream (`make bench`; streams/stored.ts
 * directBatches). A run's events are read by batched Direct Get; nats-server looks for the rest of
 * a batch after the last match through every later message block once the stream holds more than
 * 64 Ki subjects. Seeds RUNS runs (5 run events, 10 execution events each, interleaved as runs
 * overlap), then reads READS of them alternately the old way (one batch of 1024) and by
 * `readRaw` (one message, then exactly as many as its pending count names), and reports the
 * server's CPU per read (/proc) and the read's wall time.
 */
import { readFileSync } from "node:fs";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { startNats } from "../platform/local-servers.ts";
import { connectHarness } from "../platform/nats-auth/server-keys.ts";
import { ensureStreams } from "../streams/ensure-streams.ts";
import { taggedLayout } from "../streams/layout.ts";
import { readRaw } from "../streams/stored.ts";
import { eventSubject, execRef, runRef } from "../streams/subjects.ts";
import { median, recordMetrics, round } from "./support/results.ts";

const RUNS = Number(process.env.BENCH_DG_RUNS ?? 12_000);
const READS = 200;
const ROUNDS = 3;
const TYPES = ["run.submitted", "run.admitted", "run.dispatched", "run.started", "run.completed"] as const;
const LAGS = [0, 5, 10, 15, 60]; // how many runs later each event of a run comes

const server = await startNats();
const nc = await connectHarness({ servers: server.url });
const cpuMs = () => {
  const f = readFileSync(`/proc/${server.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) * 10; // utime + stime, at 100 ticks per second
};
try {
  const jsm = await jetstreamManager(nc);
  const layout = taggedLayout("bench-dg");
  await ensureStreams(jsm, layout);
  const js = jetstream(nc);
  const body = new Uint8Array(400).fill(65);
  let inFlight: Promise<unknown>[] = [];
  for (let t = 0; t < RUNS + LAGS.at(-1)!; t++) {
    for (const [k, type] of TYPES.entries()) {
      const r = t - LAGS[k]!;
      if (r < 0 || r >= RUNS) continue;
      inFlight.push(js.publish(eventSubject(layout, runRef("t-bench", `r${r}`), type), body));
      if (type === "run.started")
        for (let s = 0; s < 10; s++)
          inFlight.push(js.publish(eventSubject(layout, execRef("t-bench", `e${r}`), "exec.step-completed"), body));
    }
    if (inFlight.length > 500) {
      await Promise.all(inFlight);
      inFlight = [];
    }
  }
  await Promise.all(inFlight);
  const { state } = await jsm.streams.info(layout.eventStream);
  const filters = Array.from({ length: READS }, (_, i) => `${layout.eventPrefix}.run.t-bench.r${(i * 7919) % RUNS}.*`);
  const ways = {
    oneBatchOf1024: async (f: string) => {
      let n = 0;
      for await (const _m of await jsm.direct.getBatch(layout.eventStream, { seq: 1, next_by_subj: f, batch: 1024 }))
        n++;
      return n;
    },
    readRaw: async (f: string) => (await readRaw(jsm, layout.eventStream, f)).length,
  };
  const cpu: Record<string, number[]> = { oneBatchOf1024: [], readRaw: [] };
  const wall: Record<string, number[]> = { oneBatchOf1024: [], readRaw: [] };
  for (let r = 0; r < ROUNDS; r++)
    for (const [name, read] of r % 2 === 0 ? Object.entries(ways) : Object.entries(ways).reverse()) {
      const c0 = cpuMs();
      for (const f of filters) {
        const t0 = performance.now();
        if ((await read(f)) !== TYPES.length) throw new Error(`${name} read a run's events short on ${f}`);
        wall[name]!.push(performance.now() - t0);
      }
      cpu[name]!.push((cpuMs() - c0) / READS);
    }
  const note = `${state.messages} messages, ${state.num_subjects} subjects (${RUNS} runs); median of ${ROUNDS} alternated rounds of ${READS} reads`;
  for (const name of Object.keys(ways))
    console.log(
      `${name}: nats-server CPU ${round(median(cpu[name]!), 2)} ms per read (rounds ${cpu[name]!.map((c) => round(c, 2)).join(", ")}), wall p50 ${round(median(wall[name]!), 2)} ms; ${note}`,
    );
  await recordMetrics({
    direct_get_read_server_cpu_ms: {
      unit: "ms",
      value: round(median(cpu.readRaw!), 2),
      note: `nats-server CPU per aggregate read by readRaw (one batch of 1024, as before: ${round(median(cpu.oneBatchOf1024!), 2)} ms); ${note}`,
    },
  });
  await jsm.streams.delete(layout.eventStream);
} finally {
  await nc.close();
  await server.stop();
}
