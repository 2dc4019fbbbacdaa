import type { DagInput } from "../contracts/index.ts";

/**
 * The proof workload: a chain of `steps` steps; every 7th step is `flaky` and fails its first
 * attempt deterministically (retries under recovery), the rest are timed `compute` steps. The seed
 * shifts which steps are flaky so different seeds exercise different interleavings.
 */
export function proofDag(steps: number, stepMs: number, seed: number): DagInput {
  return {
    name: `proof-${steps}x${stepMs}ms`,
    steps: Array.from({ length: steps }, (_, i) => {
      const id = `s${String(i + 1).padStart(3, "0")}`;
      const dependsOn = i === 0 ? [] : [`s${String(i).padStart(3, "0")}`];
      return (i + seed) % 7 === 0
        ? { id, kind: "flaky" as const, dependsOn, params: { durationMs: stepMs, failAttempts: 1 }, retry: { maxAttempts: 3, backoffMs: 5 } }
        : { id, kind: "compute" as const, dependsOn, params: { durationMs: stepMs } };
    }),
  };
}
