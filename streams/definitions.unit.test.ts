import { describe, expect, it } from "vitest";
import { deadLetterStreamConfig, eventStreamConfig, heartbeatStreamConfig } from "./definitions.ts";
import { configDifferences } from "./ensure-streams.ts";
import { DEFAULT_LAYOUT } from "./layout.ts";
import { DEFAULT_STREAM_LIMITS, eventCompactionFromEnv, streamLimits, streamLimitsFromEnv } from "./limits.ts";

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

describe("heartbeat and dead-letter limits from configuration (pure config, no transport)", () => {
  it("bounds the dead-letter stream by age, count and bytes, and takes every limit from the environment", () => {
    expect(deadLetterStreamConfig(DEFAULT_LAYOUT)).toMatchObject({
      max_age: DEFAULT_STREAM_LIMITS.deadLetterMaxAgeMs * 1e6,
      max_msgs: 100_000,
      max_bytes: 256 * 1024 * 1024,
    });
    const limits = streamLimitsFromEnv({ DROVER_DLQ_MAX_MSGS: "5", DROVER_HEARTBEAT_MAX_AGE_MS: "120000" });
    expect(limits).toMatchObject({ deadLetterMaxMsgs: 5, heartbeatMaxAgeMs: 120_000, heartbeatsPerRuntime: 3 });
    expect(heartbeatStreamConfig(DEFAULT_LAYOUT, { limits })).toMatchObject({
      max_age: 120e9,
      max_msgs_per_subject: 3,
    });
    expect(deadLetterStreamConfig(DEFAULT_LAYOUT, { limits }).max_msgs).toBe(5);
  });

  it("refuses a non-positive limit and a heartbeat age a healthy runtime could outlive between beats", () => {
    expect(() => streamLimitsFromEnv({ DROVER_DLQ_MAX_MSGS: "0" })).toThrow(/positive integer.*DROVER_DLQ_MAX_MSGS/);
    expect(() => streamLimitsFromEnv({ DROVER_DLQ_MAX_BYTES: "lots" })).toThrow(/positive integer/);
    expect(() => streamLimits({ heartbeatMaxAgeMs: 5_000 })).toThrow(/below 60000ms/);
  });
});

describe("a compactable event stream (pure config, no transport)", () => {
  it("is purgeable only when DROVER_EVENT_COMPACTION=on, and keeps deny_delete either way", () => {
    expect(eventStreamConfig(DEFAULT_LAYOUT, { compactable: true })).toMatchObject({
      deny_purge: false,
      deny_delete: true,
    });
    expect(eventCompactionFromEnv({})).toBe(false);
    expect(eventCompactionFromEnv({ DROVER_EVENT_COMPACTION: "off" })).toBe(false);
    expect(eventCompactionFromEnv({ DROVER_EVENT_COMPACTION: "on" })).toBe(true);
    expect(() => eventCompactionFromEnv({ DROVER_EVENT_COMPACTION: "yes" })).toThrow(/on or off/);
  });
});
