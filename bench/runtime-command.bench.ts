/**
 * What a runtime spends per dispatched run on its command's DAG (issue 15, W1/W2's per-run head in
 * the runtime): the DispatchRun body's parse and the DAG's digest at the run's start, for a 10-step
 * chain (W2's DAG) and a 50-step chain (W1's), each run with a fresh body as it comes off the wire.
 * `full`: `RuntimeCommand.safeParse` and a digest of the canonical JSON per run (before);
 * `memo`: `parseRuntimeCommand` through a DagMemo and `dagDigest` kept with the checked DAG (now).
 * Best of 9 rounds of 2,000 runs each, the two forms alternated in one process: µs per run.
 */
import { DagMemo, parseRuntimeCommand, RuntimeCommand } from "../contracts/index.ts";
import { canonicalJson } from "../aggregates/step-inputs.ts";
import { chainDag } from "../platform/api-client.ts";
import { dagDigest, sha256Hex } from "../services/runtime/index.ts";
import { recordMetrics, round } from "./support/results.ts";

const metrics: Record<string, { unit: string; value: number; note: string }> = {};
for (const steps of [10, 50]) {
  const text = JSON.stringify({
    operation: "DispatchRun",
    runtimeInstanceId: "rt-bench",
    correlationId: "corr-1",
    payload: {
      sharedRunId: "run-0190a0b0-0000-7000-8000-000000000001",
      localRunId: "lr-0190a0b0-0000-7000-8000-000000000001",
      tenantId: "t-bench",
      dag: chainDag(steps, 0),
      dispatchedSeq: 5,
      correlationId: "corr-1",
    },
  });
  const bodies = Array.from({ length: 2000 }, () => JSON.parse(text) as unknown);
  const dags = new DagMemo();
  const forms = {
    full: (b: unknown) => {
      const r = RuntimeCommand.safeParse(b);
      if (!r.success || r.data.operation !== "DispatchRun") throw new Error("refused");
      return sha256Hex(canonicalJson(r.data.payload.dag));
    },
    memo: (b: unknown) => {
      const r = parseRuntimeCommand(b, dags);
      if (!r.success || r.data.operation !== "DispatchRun") throw new Error("refused");
      return dagDigest(r.data.payload.dag);
    },
  };
  const best = { full: Infinity, memo: Infinity };
  for (let round = 0; round < 9; round++)
    for (const [name, f] of Object.entries(forms)) {
      const fresh = bodies.map((b) => structuredClone(b));
      const t0 = performance.now();
      for (const b of fresh) f(b);
      best[name as keyof typeof best] = Math.min(
        best[name as keyof typeof best],
        ((performance.now() - t0) * 1000) / 2000,
      );
    }
  metrics[`runtime_command_dag_us_${steps}_steps`] = {
    unit: "µs per run",
    value: round(best.memo, 1),
    note: `DispatchRun parse + DAG digest of a ${steps}-step chain, best of 9 × 2,000: ${round(best.full, 1)} µs with the full parse and digest per run, ${round(best.memo, 1)} through the DagMemo and the kept digest`,
  };
}
console.log(JSON.stringify(metrics, null, 2));
await recordMetrics(metrics);
