import { describe, expect, it } from "vitest";
import type { DroverEvent } from "../../../contracts/index.ts";
import { EXAMPLE_BUILDERS } from "../../../test/support/example-events.ts";
import { fenceStillDecided } from "./fence-append.ts";

const exited = (hostIncarnation: string, kind: string): DroverEvent => {
  const e = EXAMPLE_BUILDERS["runtime.host-exited"]() as DroverEvent & { data: object };
  return { ...e, data: { ...e.data, hostIncarnation, kind } } as DroverEvent;
};

describe("a proven kill's `fenced` after a version conflict (pure; proves no transport)", () => {
  it("is still decided when only host observations of the killed incarnation were appended since", () => {
    expect(fenceStillDecided([], "pod:u1")).toBe(true);
    expect(fenceStillDecided([exited("pod:u1", "pod-failed"), exited("pod:u1", "pod-deleted")], "pod:u1")).toBe(true);
  });

  it("is not when anything else was appended: another replica's fence, a retirement, another incarnation's fact", () => {
    expect(fenceStillDecided([exited("pod:u2", "pod-deleted")], "pod:u1")).toBe(false);
    expect(
      fenceStillDecided(
        [exited("pod:u1", "pod-deleted"), EXAMPLE_BUILDERS["runtime.fenced"]() as DroverEvent],
        "pod:u1",
      ),
    ).toBe(false);
    expect(fenceStillDecided([EXAMPLE_BUILDERS["runtime.retired"]() as DroverEvent], "pod:u1")).toBe(false);
  });
});
