import { describe, expect, it } from "vitest";
import { atRuntimeLimit } from "./single-flight.ts";

// Pure: the boundary is which runtimes of admission's view count toward a tenant's maxRuntimeInstances
// (those of its prefix the provisioner still counts and that are not lost), so that admission asks
// for no scale-out the provisioner would reject, and asks again once a runtime is lost.
const rt = (runtimeInstanceId: string, status = "ready") => ({ runtimeInstanceId, status });

describe("a tenant at its runtime limit in admission's view (pure)", () => {
  it("counts the prefix's registered, ready and draining runtimes up to the limit", () => {
    const view = [rt("rt-acme-a"), rt("rt-acme-b", "registered"), rt("rt-acme-c", "draining")];
    expect(atRuntimeLimit(view, "rt-acme", 3)).toBe(true);
    expect(atRuntimeLimit(view, "rt-acme", 4)).toBe(false);
  });

  it("does not count a lost runtime (suspected, fenced, retired): its loss allows a request again", () => {
    for (const status of ["suspected", "fenced", "retired"])
      expect(atRuntimeLimit([rt("rt-acme-a"), rt("rt-acme-b", status)], "rt-acme", 2)).toBe(false);
  });

  it("counts only runtimes named `<prefix>-…`: another tenant's, or a longer prefix sharing the start, are not its own", () => {
    const view = [rt("rt-acme-a"), rt("rt-acme2-a"), rt("rt-acmex"), rt("rt-globex-a")];
    expect(atRuntimeLimit(view, "rt-acme", 2)).toBe(false);
    expect(atRuntimeLimit(view, "rt-acme", 1)).toBe(true);
  });

  it("holds a tenant that may not grow at all (limit 0) even with no runtime", () => {
    expect(atRuntimeLimit([], "rt-acme", 0)).toBe(true);
  });
});
