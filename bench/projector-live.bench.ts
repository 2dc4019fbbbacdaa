/**
 * The forensics projector live, alone: W2's shape of stream (50 clients, each appending one run of
 * 10 steps at a time, ~600 steps/s) appended straight to the stream while the projector process
 * follows it, as `make run` starts it, into FerretDB. Prints CPU ms per 1 000 steps of the
 * projector, FerretDB and nats-server per round (`bench/support/cpu.ts`): what projecting costs
 * without the rest of the stack competing for the cores (bench/workloads.bench.ts W2 measures it
 * with every service, at several times the noise). `BENCH_ROUNDS` rounds (default 3).
 */
import { ExecutionId, LocalRunId, SharedRunId, StepId } from "../contracts/index.ts";
import { startControlPlane } from "../platform/control-plane-processes.ts";
import { startFerret, startNats, startRedis } from "../platform/local-servers.ts";
import { connectHarness } from "../platform/nats-auth/server-keys.ts";
import { readModelClient, readModelDbName } from "../platform/read-model-db.ts";
import { createEventStore } from "../streams/index.ts";
import { execRef, runRef } from "../streams/subjects.ts";
import { event } from "../test/support/streams.ts";
import { cpuSnapshot, cpuSpent } from "./support/cpu.ts";
import { WORKLOAD_TENANT } from "./support/workload-tenant.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const RUNS = 200;
const CLIENTS = 50;
const STEPS = 10;
const STEP_MS = 80; // per client: 50 clients → ~600 steps/s, W2's rate on this machine

const nats = await startNats();
const redis = await startRedis();
const ferret = await startFerret();
try {
  const cp = await startControlPlane({
    natsUrl: nats.url,
    redisUrl: redis.url,
    mongoUrl: ferret.url,
    services: ["forensics"],
    config: { controlPlaneId: "cp-projector-live", tenants: [WORKLOAD_TENANT] },
  });
  const nc = await connectHarness({ servers: nats.url });
  const store = createEventStore(nc, cp.layout);
  const mongo = readModelClient(ferret.url);
  const dbName = readModelDbName({ DROVER_STREAM_TAG: cp.streamTag }, "cp-projector-live");
  const checkpoints = mongo.db(dbName).collection<{ _id: string; seq: number }>("checkpoints");
  const tenantId = WORKLOAD_TENANT.tenantId as never;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  let last = 0;
  const oneRun = async (round: number, n: number) => {
    const sharedRunId = SharedRunId.parse(`run-${round}-${n}`);
    const executionId = ExecutionId.parse(`ex-${round}-${n}`);
    const localRunId = LocalRunId.parse(`lr-${round}-${n}`);
    const run = runRef(tenantId, sharedRunId);
    const exec = execRef(tenantId, executionId);
    const put = async (ref: typeof run, e: ReturnType<typeof event>) => {
      const seq = (await store.append(ref, { ...e, tenantId }, { expectedSeq: await store.lastSeq(ref) })).seq;
      last = Math.max(last, seq);
    };
    await put(run, { ...event("run.submitted"), data: { ...event("run.submitted").data, sharedRunId } } as never);
    await put(run, {
      ...event("run.started"),
      data: { ...event("run.started").data, executionId, localRunId },
    } as never);
    await put(exec, {
      ...event("exec.started"),
      data: { ...event("exec.started").data, sharedRunId, localRunId },
    } as never);
    for (let s = 0; s < STEPS; s++) {
      await sleep(STEP_MS);
      const step = event("exec.step-completed");
      await put(exec, { ...step, data: { ...step.data, stepId: StepId.parse(`s${s}`) } } as never);
    }
    await put(exec, event("exec.completed"));
    await put(run, event("run.completed"));
  };
  for (let round = 0; round < ROUNDS; round++) {
    const before = await cpuSnapshot();
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        for (let n = next++; n < RUNS; n = next++) await oneRun(round, n);
      }),
    );
    const appended = performance.now() - t0;
    for (const deadline = Date.now() + 120_000; ; await sleep(50)) {
      if (((await checkpoints.findOne({ _id: "forensics" }))?.seq ?? 0) >= last) break;
      if (Date.now() > deadline) throw new Error(`projector not at ${last} within 120 s`);
    }
    const spent = cpuSpent(before, await cpuSnapshot());
    const perK = (name: string) => Math.round(((spent[name] ?? 0) * 1000) / (RUNS * STEPS));
    console.log(
      JSON.stringify({
        round,
        appendedMs: Math.round(appended),
        forensics: perK("forensics"),
        ferretdb: perK("ferretdb"),
        nats: perK("nats-server"),
      }),
    );
  }
  // How the rows were cut: each chunk is a document the projector encodes and FerretDB stores.
  const chunks = await mongo.db(dbName).collection<{ rows: string }>("ledger").find().toArray();
  const rows = chunks.reduce((n, c) => n + (JSON.parse(c.rows) as unknown[]).length, 0);
  console.log(JSON.stringify({ ledgerChunks: chunks.length, ledgerRows: rows, rowsPerChunk: rows / chunks.length }));
  await mongo.close();
  await nc.close();
  await cp.stop();
} finally {
  for (const s of [nats, redis, ferret]) await s.stop();
}
