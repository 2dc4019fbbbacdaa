import { describe, expect, it } from "vitest";
import { foldedUpToRuntime } from "./plan-gate.ts";

describe("the plan waits for the follower to fold up to the runtime's last event (pure, proves no transport)", () => {
  it("a fence appended at 120 and applied at once is not planned while the follower is at 119", () => {
    expect(foldedUpToRuntime({ lastSeq: 120 }, 119)).toBe(false);
  });
  it("is planned once the follower delivered the fence itself (or anything after it)", () => {
    expect(foldedUpToRuntime({ lastSeq: 120 }, 120)).toBe(true);
    expect(foldedUpToRuntime({ lastSeq: 120 }, 135)).toBe(true);
  });
});
