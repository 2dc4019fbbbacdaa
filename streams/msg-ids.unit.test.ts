import { describe, expect, it } from "vitest";
import { DEFAULT_LAYOUT, taggedLayout } from "./layout.ts";
import { defaultMsgId, nthMsgId } from "./msg-ids.ts";
import { aggregateWildcard, eventSubject, execRef, runtimeRef, runRef } from "./subjects.ts";

describe("deterministic msg ids and aggregate subjects", () => {
  it("derives the same msg id for the same decision and different ids for different aggregates or expectations", () => {
    const a = runRef("tenant-a", "run-1");
    expect(defaultMsgId(DEFAULT_LAYOUT, a, 7)).toBe("drover.run.tenant-a.run-1:7");
    expect(defaultMsgId(DEFAULT_LAYOUT, a, 7)).toBe(defaultMsgId(DEFAULT_LAYOUT, runRef("tenant-a", "run-1"), 7));
    expect(defaultMsgId(DEFAULT_LAYOUT, a, 8)).not.toBe(defaultMsgId(DEFAULT_LAYOUT, a, 7));
    expect(defaultMsgId(DEFAULT_LAYOUT, execRef("tenant-a", "run-1"), 7)).not.toBe(defaultMsgId(DEFAULT_LAYOUT, a, 7));
    expect(defaultMsgId(DEFAULT_LAYOUT, runRef("tenant-b", "run-1"), 7)).not.toBe(defaultMsgId(DEFAULT_LAYOUT, a, 7));
  });

  it("keeps the base id for the first event of a multi-event append and suffixes the rest", () => {
    expect(nthMsgId("x:3", 0)).toBe("x:3");
    expect(nthMsgId("x:3", 2)).toBe("x:3#2");
  });

  it("scopes OCC to every event of one aggregate instance and nothing else", () => {
    const layout = taggedLayout("t1");
    expect(aggregateWildcard(layout, execRef("tenant-a", "ex-1"))).toBe("t1.drover.exec.tenant-a.ex-1.>");
    expect(aggregateWildcard(DEFAULT_LAYOUT, runtimeRef("rt-1"))).toBe("drover.runtime.rt-1.>");
    expect(eventSubject(layout, execRef("tenant-a", "ex-1"), "exec.step-completed")).toBe(
      "t1.drover.exec.tenant-a.ex-1.step-completed",
    );
    expect(() => eventSubject(layout, execRef("tenant-a", "ex-1"), "run.started")).toThrow(/does not belong/);
  });
});
