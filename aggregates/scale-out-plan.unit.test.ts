import { describe, expect, it } from "vitest";
import { LIMIT_REACHED, planScaleOut, SCALE_OUT_RETRY_MS, type KnownRequest } from "./scale-out-plan.ts";

const HB = 250;
/** A request made at `requestedMs`, rejected 500 ms later for `code`. */
const rejected = (requestedMs: number, code = LIMIT_REACHED): KnownRequest => ({
  requestId: `so-${requestedMs}`,
  status: "rejected",
  requestedMs,
  endedMs: requestedMs + 500,
  rejectedCode: code,
});

describe("scale-out planner after the loss of a runtime counted toward the limit (pure; proves no transport)", () => {
  it("without a loss, a limit-reached rejection holds the key for the whole back-off", () => {
    const known = [rejected(1_000)];
    expect(planScaleOut(known, 2_000, HB, 1)).toEqual({ kind: "hold" });
    expect(planScaleOut(known, 1_500 + SCALE_OUT_RETRY_MS, HB, 1)).toEqual({ kind: "request", generation: 1 });
  });

  it("a limit-reached rejection of a request made before the loss holds nothing: the next generation is asked at once", () => {
    expect(planScaleOut([rejected(1_000)], 2_000, HB, 1, 1_800)).toEqual({ kind: "request", generation: 1 });
  });

  it("a limit-reached rejection of a request made after the loss still backs off (the limit is full without it)", () => {
    expect(planScaleOut([rejected(1_000), rejected(2_000)], 3_000, HB, 1, 1_800)).toEqual({ kind: "hold" });
  });

  it("a rejection for another reason than the limit still backs off after a loss", () => {
    expect(planScaleOut([rejected(1_000, "host-config-missing")], 2_000, HB, 1, 1_800)).toEqual({ kind: "hold" });
  });

  it("an open request made before the loss is still waited for (one open request per key)", () => {
    const open: KnownRequest = { requestId: "so-open", status: "observed", requestedMs: 1_000 };
    expect(planScaleOut([open], 2_000, HB, 1, 1_800)).toEqual({ kind: "wait-for", requestId: "so-open" });
  });

  it("a tenant that may never grow asks for nothing, loss or not", () => {
    expect(planScaleOut([rejected(1_000)], 2_000, HB, 0, 1_800)).toEqual({ kind: "hold" });
  });

  it("a fulfilled request's grace still holds after a loss (its runtime is coming)", () => {
    const fulfilled: KnownRequest = { requestId: "so-f", status: "fulfilled", requestedMs: 1_000, endedMs: 1_700 };
    expect(planScaleOut([fulfilled], 1_800, HB, 1, 1_750)).toEqual({ kind: "hold" });
  });
});
