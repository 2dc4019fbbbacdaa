/**
 * recovery_reconcile_ms: recovery's own share of a kill, alone (run with tsx: `make bench`): against a
 * private nats-server, RUNTIMES runtimes on real `sleep` hosts, each with one in-flight execution of
 * STEPS durable steps and QUEUED runs that never started, the stream holding NOISE step events of
 * other executions as well (the proof's stream at its kills). All hosts are SIGKILLed and their exits
 * recorded at once (`runtime.host-exited`, as the provisioner does); from each runtime's exit (stream
 * timestamps): suspected → fenced → the in-flight execution paused (its item's reads and atomic
 * batch) → the plan (every item moved). No admission, provisioner or runtime runs: what is timed is
 * the recovery service's pass, fence and reconcile. p50/p99 over ROUNDS rounds.
 */
import { jetstream } from "@nats-io/jetstream";
import { createHash } from "node:crypto";
import { loadavg, cpus } from "node:os";
import { pino } from "pino";
import type { ChildProcess } from "node:child_process";
import { DroverConfig, type DroverEvent } from "../contracts/index.ts";
import { startNats } from "../platform/local-servers.ts";
import { createProcessStrategy } from "../platform/hosts/process-strategy.ts";
import { RecoveryState, startRecovery } from "../services/recovery/index.ts";
import { createEventStore, execRef, runRef, runtimeRef, type EventStore, type StoredEvent } from "../streams/index.ts";
import { exampleDag } from "../test/support/example-events.ts";
import { mkEvent, readyProcessRuntime, startSleepHost, writer } from "../test/support/recovery-fixture.ts";
import { eventually, freshStreams } from "../test/support/streams.ts";
import { quantile, recordMetrics, round, type Metric } from "./support/results.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const RUNTIMES = Number(process.env.BENCH_RECONCILE_RUNTIMES ?? 5);
const STEPS = 25;
const QUEUED = 2;
const NOISE = Number(process.env.BENCH_RECONCILE_NOISE ?? 5_000);
const CP = "cp-bench-rec";
const config = DroverConfig.parse({ controlPlaneId: CP, heartbeatIntervalMs: 500, fenceDeadlineMs: 10_000 });

/** A run of `tenant` placed on `rt`: started with STEPS durable steps, or only dispatched. */
async function placedRun(store: EventStore, tenant: string, id: string, rt: string, inc: string, started: boolean) {
  const lr = `lr-${id}`;
  let seq = 0;
  const add = async (type: DroverEvent["type"], data: unknown, c = writer("admission")) => {
    seq = (await store.append(runRef(tenant, id), mkEvent(c, type, data, tenant), { expectedSeq: seq })).seq;
  };
  await add("run.submitted", { sharedRunId: id, dag: exampleDag, source: "api", labels: {} });
  const placement = { runtimeInstanceId: rt, localRunId: lr, reservationId: "r", candidates: [], recovery: false };
  await add("run.admitted", placement);
  await add("run.dispatched", { runtimeInstanceId: rt, localRunId: lr, transport: "http", hostIncarnation: inc });
  if (!started) return;
  const ex = `exec-${id}`;
  await add("run.started", { executionId: ex, localRunId: lr, runtimeInstanceId: rt }, writer("runtime", rt));
  await store.appendAll(execRef(tenant, ex), journal(tenant, id, lr, rt), { expectedSeq: 0 });
}

const journal = (tenant: string, id: string, lr: string, rt: string) => {
  const c = writer("runtime", rt);
  const started = { sharedRunId: id, localRunId: lr, runtimeInstanceId: rt, dagDigest: "a".repeat(64), stepCount: 99 };
  const step = (i: number) => ({
    stepId: `s${i}`,
    attempt: 1,
    output: {},
    outputDigest: "b".repeat(64),
    durationMs: 1,
  });
  return [
    mkEvent(c, "exec.started", { ...started, epoch: 0 }, tenant),
    ...Array.from({ length: STEPS }, (_, i) => mkEvent(c, "exec.step-completed", step(i), tenant)),
  ];
};

type Stage = "suspected" | "fenced" | "paused" | "planned";
const STAGES: Stage[] = ["suspected", "fenced", "paused", "planned"];

async function round1(url: string, r: number): Promise<Record<Stage, number>[]> {
  const fx = await freshStreams(url, `benchrec${r}`);
  const store = createEventStore(fx.nc, fx.layout);
  const hosts: ChildProcess[] = [];
  const strategy = createProcessStrategy();
  try {
    // Other tenants' executions: the stream a reconcile reads in is not only the failed runtime's.
    for (let n = 0; n < NOISE; n += STEPS + 1)
      await store.appendAll(execRef("t-noise", `exec-noise-${n}`), journal("t-noise", `run-n${n}`, "lr", "rt-x"), {
        expectedSeq: 0,
      });
    const rts: { rt: string; tenant: string; inc: string; host: ChildProcess }[] = [];
    for (let i = 0; i < RUNTIMES; i++) {
      const host = await startSleepHost(hosts);
      const rt = `rt-bench-${r}-${i}`;
      const tenant = `t-bench-${i}`;
      const inc = await readyProcessRuntime(store, { controlPlaneId: CP, rt, pid: host.pid!, tenantId: tenant });
      await placedRun(store, tenant, `run-${i}-f`, rt, inc, true);
      for (let q = 0; q < QUEUED; q++) await placedRun(store, tenant, `run-${i}-q${q}`, rt, inc, false);
      rts.push({ rt, tenant, inc, host });
    }
    const service = await startRecovery({
      js: jetstream(fx.nc),
      config,
      layout: fx.layout,
      store,
      state: new RecoveryState(fx.layout.eventPrefix, () => undefined),
      env: writer("test"),
      hosts: () => strategy,
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: pino({ level: process.env.BENCH_LOG ?? "silent" }),
    });
    try {
      await service.ready;
      for (const { host } of rts) host.kill("SIGKILL");
      await Promise.all(
        rts.map(({ host }) => new Promise((ok) => (host.exitCode !== null ? ok(0) : host.once("exit", ok)))),
      );
      await Promise.all(
        rts.map(async ({ rt, inc }) => {
          const exited = { hostIncarnation: inc, kind: "exited", exitCode: null, signal: "SIGKILL", detail: "" };
          await store.append(runtimeRef(rt), mkEvent(writer("test"), "runtime.host-exited", exited), {
            expectedSeq: await store.lastSeq(runtimeRef(rt)),
          });
        }),
      );
      const logOf = async (): Promise<StoredEvent[]> => {
        const out: StoredEvent[] = [];
        await store.replay({ seq: 1 }, (e) => void out.push(e), {
          filter: [`${fx.layout.eventPrefix}.runtime.>`, `${fx.layout.eventPrefix}.exec.*.*.paused-for-recovery`],
        });
        return out;
      };
      const log = await eventually(
        "every runtime planned",
        async () => {
          const l = await logOf();
          return l.filter((e) => e.event.type === "runtime.recovery-planned").length === RUNTIMES ? l : undefined;
        },
        60_000,
      );
      return rts.map(({ rt, tenant }) => {
        const at = (pred: (e: StoredEvent) => boolean) => log.find(pred)?.time.getTime() ?? Number.NaN;
        const own = (type: string) => at((e) => e.subject.endsWith(`.runtime.${rt}.${type}`));
        const exited = own("host-exited");
        return {
          suspected: own("suspected") - exited,
          fenced: own("fenced") - exited,
          paused:
            at((e) => e.subject.includes(`.exec.${tenant}.exec-run-`) && e.event.type === "exec.paused-for-recovery") -
            exited,
          planned: own("recovery-planned") - exited,
        };
      });
    } finally {
      await service.stop();
    }
  } finally {
    for (const h of hosts) h.kill("SIGKILL");
    await strategy.close();
    await fx.close();
  }
}

const nats = await startNats();
try {
  const load = round(loadavg()[0]!, 1);
  const samples: Record<Stage, number>[] = [];
  for (let r = 0; r < ROUNDS; r++) samples.push(...(await round1(nats.url, r)));
  const q = (s: Stage, p: number) =>
    Math.round(
      quantile(
        samples.map((x) => x[s]),
        p,
      ),
    );
  for (const s of STAGES) console.log(`${s.padEnd(10)} p50 ${q(s, 0.5)} ms  p99 ${q(s, 0.99)} ms (after host-exited)`);
  const where = `${RUNTIMES} runtimes exited at once, each 1 in-flight execution of ${STEPS} steps + ${QUEUED} queued runs, ${NOISE} other step events in the stream; ${ROUNDS} rounds; ${cpus().length} cores, load average ${load} at start`;
  const metric = (s: Stage, note: string): Metric => ({
    unit: "ms",
    value: q(s, 0.5),
    p50: q(s, 0.5),
    p99: q(s, 0.99),
    note: `${note}; ${where}`,
  });
  const metrics = {
    recovery_reconcile_paused_ms: metric(
      "paused",
      "host-exited recorded → in-flight execution paused for recovery (recovery alone)",
    ),
    recovery_reconcile_planned_ms: metric(
      "planned",
      "host-exited recorded → runtime.recovery-planned (recovery alone)",
    ),
  };
  console.log(JSON.stringify(metrics, null, 2));
  await recordMetrics(metrics);
} finally {
  await nats.stop();
}
