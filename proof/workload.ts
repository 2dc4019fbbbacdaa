import type { DagInput } from "../contracts/index.ts";

/**
 * Which step code the proof's chain runs: the built-in kinds, or a tenant worker (proof/custom-worker.ts);
 * or, instead of the chain, `control-flow`: a map with its fan-in and a wait (proof/control-flow-workload.ts).
 */
export type ProofWorkload = "builtin" | "custom" | "control-flow";

/** Output padding of a `custom` chain step that goes to the object store (above the 8 KiB inline limit). */
export const STORED_PAD = 9000;

const idOf = (i: number): string => `s${String(i + 1).padStart(3, "0")}`;

/**
 * The proof workload: a chain of `steps` steps; every 7th step is flaky and fails its first attempt
 * deterministically (retries under recovery), every 11th is a `sleep` (a durable timer in the
 * journal, so replay validation sees timers across kills), the rest are timed work. The seed shifts
 * which steps are flaky or sleep so different seeds exercise different interleavings.
 *
 * `builtin`: work is `compute`, flaky is `flaky`. `custom`: work and flaky are the tenant worker's
 * `chain-work` and `chain-flaky`, each taking its predecessor's output by `$ref`, and every 13th
 * step's output is padded past the inline limit, so it is stored in the object store and read back
 * by its dependent (and by a resumed execution).
 *
 * `holds`: the step at each `index` is a `sleep` of its `ms` (a durable timer). The proof kills a
 * runtime once `killAfterSteps` steps are durable and holds the next one, so the kill lands while the
 * execution is still running even when the proof's own process lags behind the journal (on a
 * loaded machine it lagged past the remaining 25 × 10 ms and the run completed before its kill).
 */
export function proofDag(
  steps: number,
  stepMs: number,
  seed: number,
  workload: ProofWorkload = "builtin",
  holds: readonly { readonly index: number; readonly ms: number }[] = [],
): DagInput {
  return {
    name: `proof-${workload === "custom" ? "custom-" : ""}${steps}x${stepMs}ms`,
    steps: Array.from({ length: steps }, (_, i) => {
      const id = idOf(i);
      const dependsOn = i === 0 ? [] : [idOf(i - 1)];
      const hold = holds.find((h) => h.index === i);
      if (hold) return { id, kind: "sleep" as const, dependsOn, params: { durationMs: hold.ms } };
      const flaky = (i + seed) % 7 === 0;
      if (!flaky && (i + seed) % 11 === 5)
        return { id, kind: "sleep" as const, dependsOn, params: { durationMs: stepMs } };
      const retry = { maxAttempts: 3, backoffMs: 5 };
      if (workload === "custom") {
        const pad = (i + seed) % 13 === 3 ? STORED_PAD : 0;
        const prev = i === 0 ? null : { $ref: `steps.${idOf(i - 1)}.output` };
        return {
          id,
          kind: "custom" as const,
          handler: flaky ? "chain-flaky" : "chain-work",
          dependsOn,
          params: { durationMs: stepMs, prev, ...(pad ? { pad } : {}), ...(flaky ? { failAttempts: 1 } : {}) },
          ...(flaky ? { retry } : {}),
        };
      }
      if (flaky)
        return { id, kind: "flaky" as const, dependsOn, params: { durationMs: stepMs, failAttempts: 1 }, retry };
      return { id, kind: "compute" as const, dependsOn, params: { durationMs: stepMs } };
    }),
  };
}
