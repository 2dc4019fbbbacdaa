import { describe, expect, it } from "vitest";
import { deadLetterStreamConfig, eventStreamConfig, heartbeatStreamConfig } from "./definitions.ts";
import { configDifferences } from "./ensure-streams.ts";
import { DEFAULT_LAYOUT } from "./layout.ts";

describe("stream definitions as code", () => {
  it("defines DROVER as an immutable atomic log with no per-subject limit and a dedupe window of at least 2 minutes", () => {
    const c = eventStreamConfig(DEFAULT_LAYOUT);
    expect(c).toMatchObject({
      name: "DROVER",
      subjects: ["drover.>"],
      storage: "file",
      deny_delete: true,
      deny_purge: true,
      allow_atomic: true,
      allow_direct: true,
      max_msgs_per_subject: -1,
    });
    expect(c.duplicate_window).toBe(120e9);
    expect(() => eventStreamConfig(DEFAULT_LAYOUT, { duplicateWindowMs: 60_000 })).toThrow(/below/);
  });

  it("keeps a few heartbeats per runtime for minutes, and captures the event stream's give-up advisories as dead letters", () => {
    expect(heartbeatStreamConfig(DEFAULT_LAYOUT)).toMatchObject({
      name: "HEARTBEATS",
      subjects: ["drover-hb.>"],
      max_msgs_per_subject: 3,
    });
    expect(deadLetterStreamConfig(DEFAULT_LAYOUT).subjects).toEqual([
      "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.DROVER.*",
      "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.DROVER.*",
    ]);
  });

  it("reports each differing field of an existing stream, comparing subjects as sets and absent booleans as false", () => {
    const want = eventStreamConfig(DEFAULT_LAYOUT);
    expect(configDifferences(want, { ...want })).toEqual([]);
    expect(
      configDifferences({ subjects: ["a.>", "b.>"], allow_rollup_hdrs: false }, { subjects: ["b.>", "a.>"] }),
    ).toEqual([]);
    expect(configDifferences(want, { ...want, deny_delete: false, subjects: ["other.>"] })).toEqual([
      'subjects: want ["drover.>"], have ["other.>"]',
      "deny_delete: want true, have false",
    ]);
  });
});
