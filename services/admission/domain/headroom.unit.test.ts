import { describe, expect, it } from "vitest";
import { mayTakeSharedPlace } from "./headroom.ts";

describe("headroom on a shared runtime (pure; proves no transport)", () => {
  it("a tenant holding the headroom or more fills the runtime up to all but its last `headroom` places", () => {
    // 12 places, headroom 2: a lone flooding tenant takes 10.
    let held = 0;
    while (mayTakeSharedPlace(held, 12 - held, 2, 5_000)) held++;
    expect(held).toBe(10);
  });

  it("a tenant holding fewer than the headroom takes the kept places", () => {
    expect(mayTakeSharedPlace(0, 2, 2)).toBe(true);
    expect(mayTakeSharedPlace(1, 1, 2)).toBe(true);
    expect(mayTakeSharedPlace(2, 2, 2)).toBe(false);
    expect(mayTakeSharedPlace(0, 0, 2)).toBe(false);
  });

  it("a tenant holding the headroom or more still takes a kept place while it has no backlog (at most `headroom` runs waiting)", () => {
    // The flood holds 10 of 12 places; the quiet tenant's two earlier runs are still there.
    expect(mayTakeSharedPlace(2, 2, 2, 1)).toBe(true);
    expect(mayTakeSharedPlace(3, 1, 2, 2)).toBe(true);
    expect(mayTakeSharedPlace(2, 0, 2, 1)).toBe(false); // no place left at all
    // A backlog (two tenants flooding together, or a burst): the kept places are not its.
    expect(mayTakeSharedPlace(2, 2, 2, 3)).toBe(false);
    expect(mayTakeSharedPlace(10, 2, 2, 5_000)).toBe(false);
  });

  it("a tenant ahead of its fair share (not due) takes no kept place, however few it holds or waits for", () => {
    expect(mayTakeSharedPlace(0, 2, 2, 5_000, false)).toBe(false);
    expect(mayTakeSharedPlace(1, 1, 2, 1, false)).toBe(false);
    // Places beyond the kept ones are shared by the fair order alone.
    expect(mayTakeSharedPlace(10, 3, 2, 5_000, false)).toBe(true);
    expect(mayTakeSharedPlace(100, 1, 0, 5_000, false)).toBe(true);
  });

  it("headroom 0 turns it off: any free place may be taken", () => {
    expect(mayTakeSharedPlace(100, 1, 0)).toBe(true);
    expect(mayTakeSharedPlace(100, 0, 0)).toBe(false);
  });
});
