/**
 * What one real runtime process journals (run with tsx: `make bench`), against a private nats-server:
 *
 *  - runtime_steps_serial: trivial compute steps of one 500-step chain (one append in flight at a
 *    time: scheduler + step + OCC checkpoint per step), from the journal's server timestamps;
 *  - runtime_steps_parallel: trivial steps of 8 concurrent 100-step chains on one runtime
 *    (maxConcurrentRuns 8), first to last step-completed;
 *  - resume_to_first_step: ResumeExecution sent → the replacement's first step started (p50/p99
 *    over ROUNDS recoveries of a 50-step chain killed after 25 durable steps).
 * Medians of ROUNDS rounds.
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
  return String((r.payload.run as { executionId: string }).executionId);
}

const stepTimes = (events: Awaited<ReturnType<typeof waitForJournal>>) =>
  events.filter((e) => e.event.type === "exec.step-completed").map((e) => e.time.getTime());
const done = (es: Awaited<ReturnType<typeof waitForJournal>>) => es.some((e) => e.event.type === "exec.completed");

async function main(): Promise<void> {
  const nats = await startNats();
  const serial: number[] = [];
  const parallel: number[] = [];
  const resume: number[] = [];
  try {
    for (let r = 0; r < ROUNDS; r++) {
      const cp = await openControlPlaneDouble(nats.url, `bench-rt-${r}`);
      const rt = await startRuntimeProcess({
        natsUrl: nats.url,
        streamTag: `bench-rt-${r}`,
        runtimeInstanceId: `rt-bench-${r}`,
        transport: "http",
        tenantId: T,
        sizing: { workers: 8, maxConcurrentRuns: 8, localQueueCapacity: 8, maxWorkersPerRun: 1 },
      });
      try {
        const chain = await dispatch(cp, rt, chainDag(500, 0), `serial-${r}`);
        const ts = stepTimes(await waitForJournal(cp, T, chain, done));
        serial.push((ts.length - 1) / (((ts.at(-1) ?? 0) - (ts[0] ?? 0)) / 1000));
        const execs = await Promise.all(
          Array.from({ length: 8 }, (_, i) => dispatch(cp, rt, chainDag(100, 0), `par-${r}-${i}`)),
        );
        const all = (await Promise.all(execs.map((e) => waitForJournal(cp, T, e, done)))).flatMap(stepTimes);
        parallel.push((all.length - 1) / ((Math.max(...all) - Math.min(...all)) / 1000));

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
        await waitForJournal(cp, T, executionId, done);
      } finally {
        await rt.kill();
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
      note: `one 500-step chain of trivial steps, one runtime; median of ${ROUNDS}`,
    },
    runtime_steps_parallel: {
      unit: "steps/s",
      value: round(median(parallel)),
      note: `8 concurrent 100-step chains on one runtime; median of ${ROUNDS}`,
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
