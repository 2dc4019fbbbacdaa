import type { DagInput } from "../contracts/index.ts";

/**
 * The proof workload: a chain of `steps` steps; every 7th step is `flaky` and fails its first
 * attempt deterministically (retries under recovery), every 11th is a `sleep` (a durable timer in
 * the journal, so replay validation sees timers across kills), the rest are timed `compute` steps.
 * The seed shifts which steps are flaky or sleep so different seeds exercise different interleavings.
 */
export function proofDag(steps: number, stepMs: number, seed: number): DagInput {
  return {
    name: `proof-${steps}x${stepMs}ms`,
    steps: Array.from({ length: steps }, (_, i) => {
      const id = `s${String(i + 1).padStart(3, "0")}`;
      const dependsOn = i === 0 ? [] : [`s${String(i).padStart(3, "0")}`];
      if ((i + seed) % 7 === 0)
        return {
          id,
          kind: "flaky" as const,
          dependsOn,
          params: { durationMs: stepMs, failAttempts: 1 },
          retry: { maxAttempts: 3, backoffMs: 5 },
        };
      if ((i + seed) % 11 === 5) return { id, kind: "sleep" as const, dependsOn, params: { durationMs: stepMs } };
      return { id, kind: "compute" as const, dependsOn, params: { durationMs: stepMs } };
    }),
  };
}
