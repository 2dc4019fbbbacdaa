import { LocalRunId, SharedRunId } from "../contracts/index.ts";
import { executionIdFor } from "../services/runtime/index.ts";
/**
 * What one real runtime process journals (run with tsx: `make bench`), against a private nats-server:
 *
 *  - runtime_steps_serial: trivial compute steps of one 500-step chain (one append in flight at a
 *    time: scheduler + step + OCC checkpoint per step), from the journal's server timestamps;
 *  - runtime_steps_parallel: trivial steps of 8 concurrent 100-step chains on one runtime,
 *    first to last step-completed;
 *  - runtime_steps_parallel_50: the same for 50 concurrent 100-step chains (issue #15's target shape);
 *  - each note adds the runtime process's CPU ms per 1,000 steps (/proc, user + system): a figure
 *    that depends far less on the machine's load than a rate does;
 *  - resume_to_first_step: ResumeExecution sent → the replacement's first step started (p50/p99
 *    over ROUNDS recoveries of a 50-step chain killed after 25 durable steps).
 * Medians of ROUNDS rounds (BENCH_ROUNDS, 3). With DROVER_CPU_PROF_DIR, the measured runtime writes a V8
 * CPU profile there (drained at each round's end, not killed), and each parallel shape's window is printed.
 */
import type { DagDefinition } from "../contracts/index.ts";
import {
  admitAndDispatch,
  chainDag,
  openControlPlaneDouble,
  pauseForRecovery,
  waitForJournal,
  type ControlPlaneDouble,
} from "../test/support/control-plane-double.ts";
import { startRuntimeProcess, type RuntimeProcess } from "../test/support/runtime-process.ts";
import { startNats } from "../platform/local-servers.ts";
import { readFileSync } from "node:fs";
import { median, quantile, recordMetrics, round } from "./support/results.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const T = "t-bench";

async function dispatch(
  cp: ControlPlaneDouble,
  rt: RuntimeProcess,
  dag: DagDefinition,
  sharedRunId: string,
): Promise<string> {
  const localRunId = `${sharedRunId}-l1`;
  const dispatchedSeq = await admitAndDispatch(
    cp,
    {
      tenantId: T,
      sharedRunId,
      localRunId,
      runtimeInstanceId: rt.runtimeInstanceId,
      hostIncarnation: rt.hostIncarnation,
      transport: rt.transport,
    },
    dag,
  );
  const r = await rt.send({
    operation: "DispatchRun",
    payload: { sharedRunId, localRunId, tenantId: T, dag, dispatchedSeq, correlationId: sharedRunId },
  } as never);
  if (!r.success) throw new Error(`dispatch refused: ${r.failureReason} ${r.failureDetail}`);
  return executionIdFor(SharedRunId.parse(sharedRunId), LocalRunId.parse(localRunId));
}

/** CPU ms (user + system) a process has used so far (Linux /proc; USER_HZ 100). */
const cpuMs = (pid: number): number => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) * 10;
};

const stepTimes = (events: Awaited<ReturnType<typeof waitForJournal>>) =>
  events.filter((e) => e.event.type === "exec.step-completed").map((e) => e.time.getTime());
const done = (es: Awaited<ReturnType<typeof waitForJournal>>) => es.some((e) => e.event.type === "exec.completed");
/**
 * Waits for an execution's end reading its journal only when `exec.completed` is published (and
 * every 250 ms): reading the whole journal on every step, as a test's wait does, made this driver
 * and nats-server take CPU from the runtime measured (O(steps²) reads of a 500-step chain).
 */
const ended = (cp: ControlPlaneDouble, executionId: string) =>
  waitForJournal(cp, T, executionId, done, 60_000, (subject) => subject.endsWith(".completed"));

async function main(): Promise<void> {
  const nats = await startNats();
  const serial: number[] = [];
  const parallel: number[] = [];
  const parallel50: number[] = [];
  const resume: number[] = [];
  // Runtime and nats-server CPU ms per 1,000 steps, per shape.
  const cpu = { serial: [] as number[], parallel: [] as number[], parallel50: [] as number[] };
  const natsCpu = { serial: [] as number[], parallel: [] as number[], parallel50: [] as number[] };
  try {
    for (let r = 0; r < ROUNDS; r++) {
      const cp = await openControlPlaneDouble(nats.url, `bench-rt-${r}`);
      const rt = await startRuntimeProcess({
        natsUrl: nats.url,
        streamTag: `bench-rt-${r}`,
        runtimeInstanceId: `rt-bench-${r}`,
        transport: "http",
        tenantId: T,
        sizing: { workers: 50, maxConcurrentRuns: 50, localQueueCapacity: 50, maxWorkersPerRun: 1 },
      });
      try {
        let c0 = cpuMs(rt.pid);
        let n0 = cpuMs(nats.pid);
        const chain = await dispatch(cp, rt, chainDag(500, 0), `serial-${r}`);
        const ts = stepTimes(await ended(cp, chain));
        serial.push((ts.length - 1) / (((ts.at(-1) ?? 0) - (ts[0] ?? 0)) / 1000));
        cpu.serial.push(((cpuMs(rt.pid) - c0) * 1000) / ts.length);
        natsCpu.serial.push(((cpuMs(nats.pid) - n0) * 1000) / ts.length);
        for (const [n, out, cpuOut, natsOut] of [
          [8, parallel, cpu.parallel, natsCpu.parallel],
          [50, parallel50, cpu.parallel50, natsCpu.parallel50],
        ] as const) {
          c0 = cpuMs(rt.pid);
          n0 = cpuMs(nats.pid);
          const fromUs = process.hrtime.bigint() / 1000n;
          const execs = await Promise.all(
            Array.from({ length: n }, (_, i) => dispatch(cp, rt, chainDag(100, 0), `par${n}-${r}-${i}`)),
          );
          const all = (await Promise.all(execs.map((e) => ended(cp, e)))).flatMap(stepTimes);
          out.push((all.length - 1) / ((Math.max(...all) - Math.min(...all)) / 1000));
          cpuOut.push(((cpuMs(rt.pid) - c0) * 1000) / all.length);
          natsOut.push(((cpuMs(nats.pid) - n0) * 1000) / all.length);
          // The monotonic clock V8's CPU profiles use (µs): cut the runtime's profile (DROVER_CPU_PROF_DIR) to a shape.
          if (process.env.DROVER_CPU_PROF_DIR)
            console.log(`${n} chains, round ${r}: monotonic window (µs) ${fromUs} ${process.hrtime.bigint() / 1000n}`);
        }

        const dag = chainDag(50, 20);
        const victim = await startRuntimeProcess({
          natsUrl: nats.url,
          streamTag: `bench-rt-${r}`,
          runtimeInstanceId: `rt-victim-${r}`,
          transport: "grpc",
          tenantId: T,
        });
        const executionId = await dispatch(cp, victim, dag, `resume-${r}`);
        await waitForJournal(cp, T, executionId, (es) => stepTimes(es).length >= 25);
        await victim.kill();
        await pauseForRecovery(cp, {
          tenantId: T,
          sharedRunId: `resume-${r}`,
          executionId,
          failedRuntimeInstanceId: victim.runtimeInstanceId,
          failedLocalRunId: `resume-${r}-l1`,
          newEpoch: 1,
        });
        const dispatchedSeq = await admitAndDispatch(
          cp,
          {
            tenantId: T,
            sharedRunId: `resume-${r}`,
            localRunId: `resume-${r}-l2`,
            runtimeInstanceId: rt.runtimeInstanceId,
            hostIncarnation: rt.hostIncarnation,
            transport: rt.transport,
            resumeExecutionId: executionId,
          },
          dag,
        );
        const sent = performance.now();
        await rt.send({
          operation: "ResumeExecution",
          payload: {
            sharedRunId: `resume-${r}`,
            localRunId: `resume-${r}-l2`,
            tenantId: T,
            dag,
            dispatchedSeq,
            correlationId: "b",
            executionId,
            epoch: 1,
          },
        } as never);
        await rt.waitForLine((l) => l.event === "first-step-started" && l.executionId === executionId);
        resume.push(performance.now() - sent);
        await ended(cp, executionId);
      } finally {
        // With DROVER_CPU_PROF_DIR, a drain (SIGTERM) instead of a SIGKILL: the runtime writes its profile as it exits.
        await (process.env.DROVER_CPU_PROF_DIR ? rt.stop() : rt.kill());
        await cp.close();
      }
    }
  } finally {
    await nats.stop();
  }
  const metrics = {
    runtime_steps_serial: {
      unit: "steps/s",
      value: round(median(serial)),
      note: `one 500-step chain of trivial steps, one runtime; median of ${ROUNDS}; CPU per 1,000 steps: runtime ${round(median(cpu.serial), 0)} ms, nats-server ${round(median(natsCpu.serial), 0)} ms`,
    },
    runtime_steps_parallel: {
      unit: "steps/s",
      value: round(median(parallel)),
      note: `8 concurrent 100-step chains on one runtime; median of ${ROUNDS}; CPU per 1,000 steps: runtime ${round(median(cpu.parallel), 0)} ms, nats-server ${round(median(natsCpu.parallel), 0)} ms`,
    },
    runtime_steps_parallel_50: {
      unit: "steps/s",
      value: round(median(parallel50)),
      note: `50 concurrent 100-step chains on one runtime; median of ${ROUNDS}; CPU per 1,000 steps: runtime ${round(median(cpu.parallel50), 0)} ms, nats-server ${round(median(natsCpu.parallel50), 0)} ms`,
    },
    resume_to_first_step: {
      unit: "ms",
      value: round(median(resume)),
      p50: round(median(resume)),
      p99: round(quantile(resume, 0.99)),
      note: `ResumeExecution sent → first resumed step started; ${ROUNDS} recoveries`,
    },
  };
  console.log(JSON.stringify(metrics, null, 2));
  await recordMetrics(metrics);
}

await main();
