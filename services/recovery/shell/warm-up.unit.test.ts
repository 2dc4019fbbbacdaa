import { describe, expect, it } from "vitest";
import { EVENT_TYPES } from "../../../contracts/index.ts";
import { warmUpIncidentParsers } from "./warm-up.ts";

describe("recovery's incident parser warm-up", () => {
  it("compiles the parser of every run, exec, forensics, scale-out and runtime event, and no other", async () => {
    const expected = EVENT_TYPES.filter((t) => /^(?:exec|run|forensics|scaleout|runtime)\./.test(t)).length;
    expect(expected).toBeGreaterThan(40);
    expect(await warmUpIncidentParsers()).toBe(expected);
  });

  it("compiles nothing more once stopped", async () => {
    expect(await warmUpIncidentParsers(() => true)).toBe(0);
  });
});
