import { describe, expect, it } from "vitest";
import { mayTakeSharedPlace } from "./headroom.ts";

describe("headroom on a shared runtime (pure; proves no transport)", () => {
  it("a tenant holding the headroom or more fills the runtime up to all but its last `headroom` places", () => {
    // 12 places, headroom 2: a lone flooding tenant takes 10.
    let held = 0;
    while (mayTakeSharedPlace(held, 12 - held, 2)) held++;
    expect(held).toBe(10);
  });

  it("a tenant holding fewer than the headroom takes the kept places", () => {
    expect(mayTakeSharedPlace(0, 2, 2)).toBe(true);
    expect(mayTakeSharedPlace(1, 1, 2)).toBe(true);
    expect(mayTakeSharedPlace(2, 2, 2)).toBe(false);
    expect(mayTakeSharedPlace(0, 0, 2)).toBe(false);
  });

  it("headroom 0 turns it off: any free place may be taken", () => {
    expect(mayTakeSharedPlace(100, 1, 0)).toBe(true);
    expect(mayTakeSharedPlace(100, 0, 0)).toBe(false);
  });
});
