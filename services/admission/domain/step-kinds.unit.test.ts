import { describe, expect, it } from "vitest";
import { missingKinds, offeringEveryKind, stepKindQueueReason } from "./step-kinds.ts";

/** Pure placement rule: no transport. */
describe("admission places a run only on a runtime offering every step kind of its DAG (pure, proves no transport)", () => {
  const docs = { runtimeInstanceId: "rt-docs-1", stepKinds: ["compute", "custom:chunk-text", "http", "llm"] };
  const shared = { runtimeInstanceId: "rt-shared-1" }; // registration without stepKinds: the built-ins

  it("a registration without stepKinds offers the built-in kinds only", () => {
    expect(missingKinds(["compute"], ["compute", "custom:x"])).toEqual(["custom:x"]);
    expect(offeringEveryKind([shared], ["compute", "sleep", "http", "llm", "flaky"]).offering).toEqual([shared]);
    expect(offeringEveryKind([shared], ["custom:chunk-text"]).offering).toEqual([]);
  });

  it("keeps only the runtimes offering every required kind", () => {
    expect(offeringEveryKind([docs, shared], ["custom:chunk-text", "http"]).offering).toEqual([docs]);
    expect(offeringEveryKind([docs, shared], ["compute"]).offering).toEqual([docs, shared]);
  });

  it("queues with step-kind-unavailable naming what each eligible runtime lacks; no reason when kinds are not the cause", () => {
    expect(stepKindQueueReason([shared], ["custom:sign", "compute"])).toEqual({
      code: "step-kind-unavailable",
      detail: "no runtime offers every step kind of the DAG: rt-shared-1 lacks custom:sign",
    });
    expect(stepKindQueueReason([docs], ["custom:chunk-text"])).toBeUndefined();
    expect(stepKindQueueReason([], ["custom:chunk-text"])).toBeUndefined();
  });
});
