/**
 * W1 and W2 (issue #15 item 5) end to end through the public API, every service a process as `make
 * run` starts them (read models on: forensics over FerretDB), process hosts, private servers.
 * Clients await their runs on the API's event feed (bench/support/run-ends.ts), not by polling.
 * Times are JetStream's stored timestamps (no client clock):
 *  - W1 `w1_step_overhead_ms`: one run of 50 sequential trivial steps, 5 warm-ups then 30 measured,
 *    (submitted → completed) / 50;
 *    and `w1_head_ms`: the part of it paid once per run, submitted → the first step-completed;
 *  - W2 `w2_steps_per_s`: 200 runs of 10 sequential trivial steps, 50 clients each submitting and
 *    awaiting one run at a time; steps / (first submitted → last completed);
 *  - W3 (recovery after a SIGKILL, with and without a warm pool) is bench/w3-recovery.bench.ts.
 * Measurement knobs, off by default (the figures above are taken without them): BENCH_W1_WARMUP
 * (W1's warm-up runs, 5), BENCH_W2_WARMUP (W2-shaped runs before W2's window, 0), BENCH_W2_RUNS (200):
 * the services' cost per step once their hot paths are compiled, against a fresh process's.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { chainDag, apiClient } from "../platform/api-client.ts";
import { SERVICES, startControlPlane } from "../platform/control-plane-processes.ts";
import { startFerret, startNats, startRedis } from "../platform/local-servers.ts";
import { connectHarness } from "../platform/nats-auth/server-keys.ts";
import { createEventStore, type StoredEvent } from "../streams/index.ts";
import { cpuSnapshot, cpuSpent } from "./support/cpu.ts";
import { latencyMetric, recordMetrics, round } from "./support/results.ts";
import { runEnds } from "./support/run-ends.ts";
import { WORKLOAD_TENANT } from "./support/workload-tenant.ts";

const TOKEN = "bench-token-workloads-01";
const nats = await startNats();
const redis = await startRedis();
const ferret = await startFerret();
const servers = [nats, redis, ferret];
try {
  const cp = await startControlPlane({
    natsUrl: nats.url,
    redisUrl: redis.url,
    mongoUrl: ferret.url,
    // As `make run` starts them (scripts/run.sh): forensics projects every event into FerretDB.
    services: [...SERVICES, "forensics"],
    config: {
      controlPlaneId: "cp-workloads",
      heartbeatIntervalMs: 250,
      dispatchTimeoutMs: 3000,
      tenants: [WORKLOAD_TENANT],
      tokens: { [TOKEN]: { role: "tenant", tenantId: "t-w" } },
    },
  });
  const api = apiClient(cp.apiUrl, TOKEN);
  const nc = await connectHarness({ servers: nats.url });
  const store = createEventStore(nc, cp.layout);
  const log = async () => {
    const all: StoredEvent[] = [];
    await store.replay({ seq: 1 }, (e) => void all.push(e));
    return all;
  };
  const at = (all: readonly StoredEvent[], type: string, id: string) =>
    all.find((e) => e.event.type === type && e.event.correlationId === id)?.time.getTime();
  const ends = await runEnds(cp.apiUrl, TOKEN);
  const runOne = async (dag: ReturnType<typeof chainDag>) => {
    const id = (await api.submit(dag)).body.sharedRunId as string;
    await ends.ended(id);
    return id;
  };
  // CPU ms per 1,000 steps of each process kind over a workload: where the time goes, whatever the load.
  const perKSteps = (spent: Record<string, number>, steps: number) =>
    Object.fromEntries(Object.entries(spent).map(([k, ms]) => [k, round((ms * 1000) / steps, 0)]));
  const total = (perK: Record<string, number>) => Object.values(perK).reduce((a, b) => a + b, 0);
  // A workload's CPU includes writing its events into the read models: wait until the projector has
  // applied the stream's last event (the API's `asOf`), or its catch-up would be charged to the next one.
  const jsm = await jetstreamManager(nc);
  const readModelsCaughtUp = async () => {
    const last = (await jsm.streams.info(cp.layout.eventStream)).state.last_seq;
    // The run list's first page is a few reads by `_id`; polled every 100 ms, it costs next to nothing.
    for (const deadline = Date.now() + 120_000; ; await new Promise((r) => setTimeout(r, 100))) {
      if (((await api.get("/v1/runs?limit=1")).body.asOf as number) >= last) return;
      if (Date.now() > deadline) throw new Error(`read models not at ${last} within 120 s`);
    }
  };

  // W1
  const chain50 = chainDag(50, 0);
  // Opt-in, measurement only: BENCH_W1_WARMUP warm-up runs instead of 5 (see BENCH_W2_WARMUP below).
  const w1Warmup = Number(process.env.BENCH_W1_WARMUP ?? 5);
  for (let k = 0; k < w1Warmup; k++) await runOne(chain50);
  const w1: string[] = [];
  await readModelsCaughtUp();
  const w1Cpu = await cpuSnapshot();
  // The monotonic clock V8's CPU profiles use (µs): cut a profile (DROVER_CPU_PROF_DIR) to W1 or W2.
  const w1MonoUs = [process.hrtime.bigint() / 1000n];
  for (let k = 0; k < 30; k++) w1.push(await runOne(chain50));
  await readModelsCaughtUp();
  const w1CpuPerK = perKSteps(cpuSpent(w1Cpu, await cpuSnapshot()), 30 * 50);
  w1MonoUs.push(process.hrtime.bigint() / 1000n);
  let all = await log();
  const perStep = w1.map((id) => (at(all, "run.completed", id)! - at(all, "run.submitted", id)!) / 50);
  // The run's head, paid once per run: submission → its first step durable (admission, dispatch, the run's start).
  const head = w1.map((id) => at(all, "exec.step-completed", id)! - at(all, "run.submitted", id)!);
  // Where the head goes, mean ms per segment over W1's runs (stored times are whole ms: the mean resolves less).
  const segments = [
    "run.submitted",
    "run.admitted",
    "run.dispatched",
    "run.started",
    "exec.started",
    "exec.step-completed",
  ];
  const segmentMeans = segments.slice(1).map((type, i) => {
    const d = w1.map((id) => at(all, type, id)! - at(all, segments[i]!, id)!);
    return `${segments[i]} → ${type} ${round(d.reduce((a, b) => a + b, 0) / d.length, 2)}`;
  });
  console.log(`w1 head by segment (mean ms): ${segmentMeans.join(", ")}`);

  // W2
  const chain10 = chainDag(10, 0);
  // Opt-in (measurement only; the reported W2 is 200 runs after W1 unless these are set): W2-shaped runs
  // before the measured window (BENCH_W2_WARMUP) and the measured window's runs (BENCH_W2_RUNS), to tell
  // the services' per-run cost once their hot paths are compiled from the cost in a fresh process.
  const w2Runs = Number(process.env.BENCH_W2_RUNS ?? 200);
  const w2Clients = async (runs: number, out: string[]) => {
    let left = runs;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (left-- > 0) out.push(await runOne(chain10));
      }),
    );
  };
  const w2Warmup = Number(process.env.BENCH_W2_WARMUP ?? 0);
  await w2Clients(w2Warmup, []);
  const w2: string[] = [];
  await readModelsCaughtUp();
  const w2Cpu = await cpuSnapshot();
  const w2MonoUs = [process.hrtime.bigint() / 1000n];
  await w2Clients(w2Runs, w2);
  await readModelsCaughtUp();
  const w2CpuPerK = perKSteps(cpuSpent(w2Cpu, await cpuSnapshot()), w2Runs * 10);
  w2MonoUs.push(process.hrtime.bigint() / 1000n);
  all = await log();
  const w2Start = Math.min(...w2.map((id) => at(all, "run.submitted", id)!));
  const w2End = Math.max(...w2.map((id) => at(all, "run.completed", id)!));
  const stepsPerS = (w2Runs * 10) / ((w2End - w2Start) / 1000);
  console.log(JSON.stringify({ w1PerStepMs: perStep, w1HeadMs: head, w2StepsPerS: stepsPerS, w1CpuPerK, w2CpuPerK }));
  console.log(`w1 monotonic window (µs, for CPU profiles): ${w1MonoUs.join(" ")}`);
  console.log(`w2 monotonic window (µs, for CPU profiles): ${w2MonoUs.join(" ")}`);

  const metrics = {
    w1_step_overhead_ms: latencyMetric(
      perStep,
      `one run of 50 trivial sequential steps, (submitted → completed)/50, 30 runs after ${w1Warmup} warm-ups, read models on; CPU ms per 1,000 steps ${JSON.stringify(w1CpuPerK)}`,
    ),
    w1_head_ms: latencyMetric(
      head,
      "W1's runs: run.submitted → the first exec.step-completed (stored times), paid once per 50-step run",
    ),
    w2_steps_per_s: {
      unit: "steps/s",
      value: round(stepsPerS, 0),
      note: `${w2Runs} runs × 10 trivial steps${w2Warmup ? ` after ${w2Warmup} W2-shaped warm-up runs` : ""}, 50 clients each awaiting its run; CPU ms per 1,000 steps ${JSON.stringify(w2CpuPerK)}`,
    },
    w1_cpu_per_1000_steps: {
      unit: "ms",
      value: total(w1CpuPerK),
      note: `CPU (user + system) of every process of the stack per 1,000 W1 steps, the read models' catch-up included; by process ${JSON.stringify(w1CpuPerK)}`,
    },
    w2_cpu_per_1000_steps: {
      unit: "ms",
      value: total(w2CpuPerK),
      note: `CPU (user + system) of every process of the stack per 1,000 W2 steps, the read models' catch-up included; by process ${JSON.stringify(w2CpuPerK)}`,
    },
    // Issue 15 item 4: projecting a step into the read models (projector + store) against executing it (the runtime).
    ...Object.fromEntries(
      (
        [
          ["w1", w1CpuPerK],
          ["w2", w2CpuPerK],
        ] as const
      ).map(([w, perK]) => {
        const projection = (perK.forensics ?? 0) + (perK.ferretdb ?? 0);
        const runtime = perK.runtime ?? 0;
        return [
          `${w}_read_model_cpu_per_1000_steps`,
          {
            unit: "ms",
            value: projection,
            note: `CPU of the forensics projector (${perK.forensics ?? 0} ms) and FerretDB (${perK.ferretdb ?? 0} ms) per 1,000 ${w.toUpperCase()} steps, the catch-up included, against the runtime's ${runtime} ms: ${runtime ? round(projection / runtime, 2) : "n/a"}× (target: a small fraction)`,
          },
        ];
      }),
    ),
  };
  console.log(JSON.stringify(metrics, null, 2));
  await recordMetrics(metrics);
  ends.close();
  await nc.close();
  // With DROVER_CPU_PROF_DIR, the stop drains the runtimes too, so that each writes its profile.
  await cp.stop();
} finally {
  for (const s of servers) await s.stop();
}
