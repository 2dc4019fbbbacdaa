import type { DataOf, Step } from "../../contracts/index.ts";
import type { ExecutionState } from "../execution.ts";
import { canonicalJson, flakyFails, stepInputs } from "../step-inputs.ts";

/**
 * Re-derives a recorded step output from the journal alone (runtime.md "Step kinds": each kind is
 * deterministic given its recorded inputs). Returns what does not re-derive, or undefined.
 *
 * - every output: `outputDigest` is the digest of the canonical output (what dependents consumed);
 * - `compute`/`flaky`: `output.digest` is the digest of the step's inputs, i.e. of its dependencies'
 *   recorded output digests — so a step that ran on another branch's outputs is caught;
 * - `flaky`: it may only succeed after its configured failing attempts.
 * `sleep`, `http` and `llm` record what the world answered; only their digest is checked.
 */
export function rederivationProblem(
  step: Step,
  data: DataOf<"exec.step-completed">,
  prior: ExecutionState,
  digest: (s: string) => string,
): string | undefined {
  const outputDigest = digest(canonicalJson(data.output));
  if (outputDigest !== data.outputDigest)
    return `recorded outputDigest ${data.outputDigest} is not the digest of the recorded output (${outputDigest})`;
  if (step.kind !== "compute" && step.kind !== "flaky") return undefined;
  const deps = new Map([...prior.completed].map(([id, c]) => [id, c.outputDigest]));
  const want = digest(stepInputs(step, deps));
  const got = (data.output as { digest?: unknown } | null)?.digest;
  if (got !== want)
    return `output digest ${String(got)} does not re-derive from the recorded dependency outputs (expected ${want})`;
  if (step.kind === "flaky" && flakyFails(step.params.failAttempts, data.attempt)) {
    return `flaky step succeeded at attempt ${data.attempt}, but it fails its first ${step.params.failAttempts} attempts`;
  }
  return undefined;
}
