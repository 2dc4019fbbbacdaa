/**
 * Forensics projector throughput against a private nats-server and FerretDB (run with tsx: `make bench`).
 *
 *  - projector_rebuild: a build from sequence 1 of 20 runs of 100 steps each (run and execution
 *    lifecycles, every step checkpoint), events per second: few documents, many rows.
 *  - projector_rebuild_wide: the same for 300 runs of 5 steps (the shape of a proof's stream: every
 *    batch touches hundreds of run and execution documents).
 * Medians of ROUNDS rounds, each into a fresh database.
 */
import { ExecutionId, LocalRunId, SharedRunId, StepId, TenantId } from "../contracts/index.ts";
import { readModelClient } from "../platform/read-model-db.ts";
import { startForensics } from "../services/forensics/index.ts";
import { createEventStore } from "../streams/event-store.ts";
import { execRef, runRef } from "../streams/subjects.ts";
import { event, freshStreams } from "../test/support/streams.ts";
import { startFerret, startNats } from "../platform/local-servers.ts";
import { median, recordMetrics, round } from "./support/results.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SHAPES = [
  { metric: "projector_rebuild", executions: 20, steps: 100 },
  { metric: "projector_rebuild_wide", executions: 300, steps: 5 },
] as const;

const [nats, ferret] = await Promise.all([startNats(), startFerret()]);
const mongo = readModelClient(ferret.url);
try {
  for (const shape of SHAPES) await measure(shape);
} finally {
  await mongo.close();
  await Promise.all([nats.stop(), ferret.stop()]);
}

async function measure({ metric, executions: EXECUTIONS, steps: STEPS }: (typeof SHAPES)[number]): Promise<void> {
  const fx = await freshStreams(nats.url, `benchproj${STEPS}`);
  const store = createEventStore(fx.nc, fx.layout);
  let last = 0;
  const put = async (ref: Parameters<typeof store.append>[0], e: Parameters<typeof store.append>[1]) => {
    last = (await store.append(ref, e, { expectedSeq: await store.lastSeq(ref) })).seq;
  };
  for (let x = 0; x < EXECUTIONS; x++) {
    const tenantId = TenantId.parse(`tenant-${x % 4}`);
    const sharedRunId = SharedRunId.parse(`run-bench-${x}`),
      executionId = ExecutionId.parse(`ex-bench-${x}`),
      localRunId = LocalRunId.parse(`lr-bench-${x}`);
    const run = runRef(tenantId, sharedRunId),
      exec = execRef(tenantId, executionId);
    await put(run, { ...event("run.submitted"), tenantId, data: { ...event("run.submitted").data, sharedRunId } });
    await put(run, {
      ...event("run.started"),
      tenantId,
      data: { ...event("run.started").data, executionId, localRunId },
    });
    await put(exec, {
      ...event("exec.started"),
      tenantId,
      data: { ...event("exec.started").data, sharedRunId, localRunId },
    });
    for (let s = 0; s < STEPS; s++)
      await put(exec, {
        ...event("exec.step-completed"),
        tenantId,
        data: { ...event("exec.step-completed").data, stepId: StepId.parse(`s${s}`) },
      });
    await put(exec, { ...event("exec.completed"), tenantId });
    await put(run, { ...event("run.completed"), tenantId });
  }
  const rates: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const db = mongo.db(`bench_projector_${process.pid}_${r}`);
    const t0 = performance.now();
    const svc = await startForensics({ handle: fx.nc, layout: fx.layout, db });
    await svc.waitFor(last, 600_000);
    const ms = performance.now() - t0;
    rates.push(last / (ms / 1000));
    console.log(`round ${r + 1}: ${last} events in ${round(ms, 0)} ms`);
    await svc.stop();
    await db.dropDatabase();
  }
  const rate = median(rates);
  console.log(`${metric}: ${round(rate, 0)} events/s (median of ${ROUNDS})`);
  await recordMetrics({
    [metric]: {
      unit: "events/s",
      value: round(rate, 0),
      note: `${last} events: ${EXECUTIONS} executions × ${STEPS} steps, build from sequence 1 into FerretDB (SQLite)`,
    },
  });
  await fx.close();
}
