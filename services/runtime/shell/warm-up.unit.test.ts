import { describe, expect, it } from "vitest";
import { warmUpParsers, WARM_UP_COMMANDS, WARM_UP_EVENTS } from "./warm-up.ts";

// Unit tier: pure CPU on sample values; proves the samples are the paths a bound runtime takes, not any timing.
describe("a pooled runtime's parser warm-up", () => {
  it("compiles every exec and run event schema and parses one accepted sample of each run-carrying command and the probe", () => {
    expect(WARM_UP_EVENTS).toBeGreaterThan(20);
    expect(warmUpParsers()).toEqual({ events: WARM_UP_EVENTS, commands: WARM_UP_COMMANDS });
    expect(WARM_UP_COMMANDS).toBe(3);
  });
});
