import { describe, expect, it } from "vitest";
import { maxEndedRuntimesOf, maxFinishedForensicsOf, maxTerminalRunsOf } from "./from-env.ts";

describe("memory bounds from the environment (pure: proves no transport)", () => {
  it("defaults each bound, reads a count, takes `all` as no bound and refuses anything else", () => {
    expect(maxTerminalRunsOf({})).toBe(10_000);
    expect(maxEndedRuntimesOf({})).toBe(1_000);
    expect(maxFinishedForensicsOf({})).toBe(10_000);
    expect(maxEndedRuntimesOf({ DROVER_MAX_ENDED_RUNTIMES: "0" })).toBe(0);
    expect(maxFinishedForensicsOf({ DROVER_MAX_FINISHED_FORENSICS: "all" })).toBeUndefined();
    expect(() => maxEndedRuntimesOf({ DROVER_MAX_ENDED_RUNTIMES: "-1" })).toThrow(/DROVER_MAX_ENDED_RUNTIMES/);
    expect(() => maxTerminalRunsOf({ DROVER_MAX_TERMINAL_RUNS: "lots" })).toThrow(/count or "all"/);
  });
});
