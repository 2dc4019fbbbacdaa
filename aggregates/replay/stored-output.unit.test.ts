import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Step, StepId, type DataOf } from "../../contracts/index.ts";
import { initialExecutionState } from "../execution.ts";
import { canonicalJson } from "../step-inputs.ts";
import { rederivationProblem } from "./output-rederivation.ts";

/** Pure check over recorded data: no transport (the e2e tenant-code test reads real objects). */
describe("replay validation of custom-step and object-store outputs (pure, proves no transport)", () => {
  const digest = (s: string) => createHash("sha256").update(s).digest("hex");
  const step = Step.parse({ id: "c", kind: "custom", handler: "chunk-text" });
  const text = canonicalJson({ chunks: ["a", "b"] });
  const ref = { bucket: "drover-outputs", name: `t/exec-1/c/${digest(text)}`, size: text.length, digest: digest(text) };
  const stored = (outputDigest: string, r = ref) =>
    ({
      stepId: StepId.parse("c"),
      attempt: 1,
      outputRef: r,
      outputDigest,
      durationMs: 1,
    }) satisfies DataOf<"exec.step-completed">;

  it("a stored output whose bytes hash to the recorded digest matches", () => {
    expect(
      rederivationProblem(step, stored(digest(text)), initialExecutionState(), digest, new Map([[ref.name, text]])),
    ).toBeUndefined();
  });

  it("a tampered outputDigest, a tampered object or a missing object is a divergence naming it", () => {
    expect(rederivationProblem(step, stored("0".repeat(64)), initialExecutionState(), digest)).toMatch(
      /is not the stored output's digest/,
    );
    expect(
      rederivationProblem(
        step,
        stored(digest(text)),
        initialExecutionState(),
        digest,
        new Map([[ref.name, text.replace("a", "x")]]),
      ),
    ).toMatch(/hashes to .* not the recorded outputDigest/);
    expect(rederivationProblem(step, stored(digest(text)), initialExecutionState(), digest, new Map())).toMatch(
      /missing/,
    );
  });

  it("an inline custom output is checked by its digest (tenant code is not re-run)", () => {
    const data: DataOf<"exec.step-completed"> = {
      stepId: StepId.parse("c"),
      attempt: 1,
      output: { n: 1 },
      outputDigest: digest(canonicalJson({ n: 1 })),
      durationMs: 1,
    };
    expect(rederivationProblem(step, data, initialExecutionState(), digest)).toBeUndefined();
    expect(
      rederivationProblem(step, { ...data, outputDigest: "f".repeat(64) }, initialExecutionState(), digest),
    ).toMatch(/is not the digest of the recorded output/);
  });
});
