/**
 * Per-step overhead of sequential chains on one runtime process (issue #15, W3's tail): N chains of
 * S timer steps of D ms each run at once on one real runtime (its `make run` sizing for this shape:
 * 50 workers, 50 runs), against a private nats-server and no other service; the overhead is a chain's
 * step-to-step gap in the journal (JetStream's stored times) minus D. W3's tail is 20 chains × 20 ms
 * (`BENCH_GAPS_CHAINS`, `BENCH_GAPS_STEPS`, `BENCH_GAPS_MS`, `BENCH_GAPS_ROUNDS`; defaults 20, 50,
 * 20, 2). Prints the gaps' median, mean and p90 and the runtime's CPU ms per step (/proc).
 */
import { readFileSync } from "node:fs";
import { LocalRunId, SharedRunId } from "../contracts/index.ts";
import type { DagDefinition } from "../contracts/index.ts";
import { executionIdFor } from "../services/runtime/index.ts";
import { startNats } from "../platform/local-servers.ts";
import {
  admitAndDispatch,
  chainDag,
  openControlPlaneDouble,
  waitForJournal,
  type ControlPlaneDouble,
} from "../test/support/control-plane-double.ts";
import { startRuntimeProcess, type RuntimeProcess } from "../test/support/runtime-process.ts";
import { median, quantile, round } from "./support/results.ts";

const CHAINS = Number(process.env.BENCH_GAPS_CHAINS ?? 20);
const STEPS = Number(process.env.BENCH_GAPS_STEPS ?? 50);
const MS = Number(process.env.BENCH_GAPS_MS ?? 20);
const ROUNDS = Number(process.env.BENCH_GAPS_ROUNDS ?? 2);
const T = "t-bench";

const cpuMs = (pid: number): number => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) * 10;
};

async function dispatch(cp: ControlPlaneDouble, rt: RuntimeProcess, dag: DagDefinition, id: string): Promise<string> {
  const localRunId = `${id}-l1`;
  const p = { tenantId: T, sharedRunId: id, localRunId, runtimeInstanceId: rt.runtimeInstanceId };
  const dispatchedSeq = await admitAndDispatch(
    cp,
    { ...p, hostIncarnation: rt.hostIncarnation, transport: rt.transport },
    dag,
  );
  const r = await rt.send({
    operation: "DispatchRun",
    payload: { sharedRunId: id, localRunId, tenantId: T, dag, dispatchedSeq, correlationId: id },
  } as never);
  if (!r.success) throw new Error(`dispatch refused: ${r.failureReason} ${r.failureDetail}`);
  return executionIdFor(SharedRunId.parse(id), LocalRunId.parse(localRunId));
}

const nats = await startNats();
const gaps: number[] = [];
const cpu: number[] = [];
try {
  for (let r = 0; r < ROUNDS; r++) {
    const cp = await openControlPlaneDouble(nats.url, `bench-gaps-${r}`);
    const rt = await startRuntimeProcess({
      natsUrl: nats.url,
      streamTag: `bench-gaps-${r}`,
      runtimeInstanceId: `rt-gaps-${r}`,
      transport: "http",
      tenantId: T,
      sizing: { workers: 50, maxConcurrentRuns: 50, localQueueCapacity: 50, maxWorkersPerRun: 1 },
    });
    try {
      // A warm-up chain compiles the step path, as a running runtime's is.
      const warm = await dispatch(cp, rt, chainDag(200, 0), `warm-${r}`);
      await waitForJournal(cp, T, warm, (es) => es.some((e) => e.event.type === "exec.completed"), 60_000);
      const c0 = cpuMs(rt.pid);
      const execs = await Promise.all(
        Array.from({ length: CHAINS }, (_, i) => dispatch(cp, rt, chainDag(STEPS, MS), `gaps-${r}-${i}`)),
      );
      const journals = await Promise.all(
        execs.map((e) =>
          waitForJournal(
            cp,
            T,
            e,
            (es) => es.some((x) => x.event.type === "exec.completed"),
            120_000,
            (s) => s.endsWith(".completed"),
          ),
        ),
      );
      let steps = 0;
      for (const es of journals) {
        const ts = es.filter((e) => e.event.type === "exec.step-completed").map((e) => e.time.getTime());
        steps += ts.length;
        for (let k = 1; k < ts.length; k++) gaps.push(ts[k]! - ts[k - 1]!);
      }
      cpu.push((cpuMs(rt.pid) - c0) / steps);
      for (const l of rt.lines) if (l.event === "step-trace") console.log(JSON.stringify(l));
    } finally {
      await rt.kill();
      await cp.close();
    }
  }
} finally {
  await nats.stop();
}
const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
console.log(
  JSON.stringify({
    shape: `${CHAINS} chains × ${STEPS} × ${MS} ms, ${ROUNDS} rounds`,
    gapMedian: median(gaps),
    gapMean: round(mean, 2),
    gapP90: quantile(gaps, 0.9),
    overheadMeanMs: round(mean - MS, 2),
    runtimeCpuMsPerStep: cpu.map((c) => round(c, 3)),
  }),
);
