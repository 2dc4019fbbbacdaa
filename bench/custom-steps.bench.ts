import { LocalRunId, SharedRunId } from "../contracts/index.ts";
import { executionIdFor } from "../services/runtime/index.ts";
/**
 * Per-step overhead of tenant code (run with tsx: `make bench`), against a private nats-server and
 * one real runtime process whose worker is proof/custom-worker.ts, bundled as the provisioner
 * bundles it:
 *
 *  - custom_step_overhead: one 50-step chain of a trivial custom step (`chain-work`, no wait, no
 *    `$ref`), exec.started → exec.completed by the journal's server timestamps, p50 over CHAINS
 *    chains, divided by 50;
 *  - compute_step_overhead: the same chain of built-in `compute` steps (durationMs 0), same runtime,
 *    chains interleaved with the custom ones so both see the same machine load.
 */
import type { DagDefinition } from "../contracts/index.ts";
import { DagDefinition as DagSchema } from "../contracts/index.ts";
import { workerBundle } from "../platform/hosts/runtime-bundle.ts";
import { startNats } from "../platform/local-servers.ts";
import { CHAIN_KINDS } from "../proof/custom-worker.ts";
import { PROOF_WORKER_MODULE } from "../proof/scenario-config.ts";
import {
  admitAndDispatch,
  chainDag,
  openControlPlaneDouble,
  waitForJournal,
} from "../test/support/control-plane-double.ts";
import { startRuntimeProcess } from "../test/support/runtime-process.ts";
import { quantile, recordMetrics, round } from "./support/results.ts";

const CHAINS = Number(process.env.BENCH_CHAINS ?? 15);
const STEPS = 50;
const T = "t-bench";

const customChain = (n: number): DagDefinition =>
  DagSchema.parse({
    name: `custom-chain-${n}`,
    steps: Array.from({ length: n }, (_, i) => ({
      id: `s${String(i + 1).padStart(2, "0")}`,
      kind: "custom",
      handler: "chain-work",
      params: { durationMs: 0, prev: null },
      dependsOn: i === 0 ? [] : [`s${String(i).padStart(2, "0")}`],
    })),
  });

async function main(): Promise<void> {
  const nats = await startNats();
  const per: Record<"custom" | "compute", number[]> = { custom: [], compute: [] };
  try {
    const cp = await openControlPlaneDouble(nats.url, "bench-custom");
    const rt = await startRuntimeProcess({
      natsUrl: nats.url,
      streamTag: "bench-custom",
      runtimeInstanceId: "rt-bench-custom",
      transport: "http",
      tenantId: T,
      sizing: { workers: 2, maxConcurrentRuns: 1, localQueueCapacity: 2, maxWorkersPerRun: 1 },
      env: {
        DROVER_WORKER_MODULE: await workerBundle(PROOF_WORKER_MODULE),
        DROVER_WORKER_KINDS: CHAIN_KINDS.join(","),
      },
    });
    try {
      const chains = { custom: customChain(STEPS), compute: chainDag(STEPS, 0) };
      // One warm-up chain of each (module load, JIT), then CHAINS of each, interleaved.
      for (let r = -1; r < CHAINS; r++) {
        for (const kind of ["custom", "compute"] as const) {
          const sharedRunId = `${kind}-${r + 1}`;
          const localRunId = `${sharedRunId}-l1`;
          const dag = chains[kind];
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
          const res = await rt.send({
            operation: "DispatchRun",
            payload: { sharedRunId, localRunId, tenantId: T, dag, dispatchedSeq, correlationId: sharedRunId },
          } as never);
          if (!res.success) throw new Error(`dispatch refused: ${res.failureReason} ${res.failureDetail}`);
          const executionId = executionIdFor(SharedRunId.parse(sharedRunId), LocalRunId.parse(localRunId));
          const journal = await waitForJournal(cp, T, executionId, (es) =>
            es.some((e) => e.event.type === "exec.completed" || e.event.type === "exec.failed"),
          );
          const at = (type: string) => journal.find((e) => e.event.type === type)?.time.getTime();
          const started = at("exec.started");
          const completed = at("exec.completed");
          if (started === undefined || completed === undefined)
            throw new Error(`${kind} chain ${executionId} did not complete: ${journal.at(-1)?.event.type}`);
          if (r >= 0) per[kind].push((completed - started) / STEPS);
        }
      }
    } finally {
      await rt.kill();
      await cp.close();
    }
  } finally {
    await nats.stop();
  }
  const metric = (xs: number[], what: string) => ({
    unit: "ms/step",
    value: round(quantile(xs, 0.5)),
    p50: round(quantile(xs, 0.5)),
    p99: round(quantile(xs, 0.99)),
    note: `one ${STEPS}-step chain of ${what}, exec.started → exec.completed ÷ ${STEPS}; ${CHAINS} chains`,
  });
  const metrics = {
    custom_step_overhead: metric(per.custom, "a trivial custom step (tenant worker)"),
    compute_step_overhead: metric(per.compute, "built-in compute steps (durationMs 0)"),
  };
  console.log(JSON.stringify(metrics, null, 2));
  await recordMetrics(metrics);
}

await main();
