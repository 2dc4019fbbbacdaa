import { describe, expect, it } from "vitest";
import { behindOthers, mayTakeSharedPlace } from "./headroom.ts";

describe("headroom on a shared runtime (pure; proves no transport)", () => {
  it("a tenant holding the headroom or more fills the runtime up to all but its last `headroom` places", () => {
    // 12 places, headroom 2: a lone flooding tenant takes 10.
    let held = 0;
    while (mayTakeSharedPlace(held, 12 - held, 2, behindOthers(held, 1, 0))) held++;
    expect(held).toBe(10);
  });

  it("a tenant holding fewer than the headroom takes the kept places", () => {
    expect(mayTakeSharedPlace(0, 2, 2)).toBe(true);
    expect(mayTakeSharedPlace(1, 1, 2)).toBe(true);
    expect(mayTakeSharedPlace(2, 2, 2)).toBe(false);
    expect(mayTakeSharedPlace(0, 0, 2)).toBe(false);
  });

  it("a tenant holding the headroom or more still takes a kept place while it holds fewer per unit of weight than another tenant there", () => {
    // The flood holds 10 of 12 places; the quiet tenant's two earlier runs are still there.
    expect(mayTakeSharedPlace(2, 2, 2, behindOthers(2, 1, 10))).toBe(true);
    expect(mayTakeSharedPlace(2, 0, 2, behindOthers(2, 1, 10))).toBe(false); // no place left at all
    // Two tenants flooding together: the one behind catches up, neither takes the last places at par.
    expect(behindOthers(8, 1, 10)).toBe(true);
    expect(behindOthers(9, 1, 10)).toBe(false);
    expect(behindOthers(5, 1, 5)).toBe(false);
    // Per unit of weight: weight 3 holding 8 (2.67 → 3 with one more) is not behind weight 1 holding 3.
    expect(behindOthers(8, 3, 3)).toBe(false);
    expect(behindOthers(7, 3, 3)).toBe(true);
  });

  it("headroom 0 turns it off: any free place may be taken", () => {
    expect(mayTakeSharedPlace(100, 1, 0)).toBe(true);
    expect(mayTakeSharedPlace(100, 0, 0)).toBe(false);
  });
});
