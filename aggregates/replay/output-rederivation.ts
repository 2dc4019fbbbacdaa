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
 * `sleep`, `http`, `llm` and `custom` record what the world (or tenant code) answered; only their
 * digest is checked. An output kept in the object store is checked through `stored` (object name →
 * its text, as the caller read it): the reference must carry the recorded digest and the object's
 * bytes must hash to it.
 */
export function rederivationProblem(
  step: Step,
  data: DataOf<"exec.step-completed">,
  prior: ExecutionState,
  digest: (s: string) => string,
  stored?: ReadonlyMap<string, string>,
): string | undefined {
  if (data.outputRef) {
    if (data.outputRef.digest !== data.outputDigest)
      return `recorded outputDigest ${data.outputDigest} is not the stored output's digest ${data.outputRef.digest}`;
    if (stored) {
      const text = stored.get(data.outputRef.name);
      if (text === undefined) return `stored output ${data.outputRef.name} is missing from the object store`;
      const got = digest(text);
      if (got !== data.outputDigest)
        return `stored output ${data.outputRef.name} hashes to ${got}, not the recorded outputDigest ${data.outputDigest}`;
    }
    return undefined;
  }
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
