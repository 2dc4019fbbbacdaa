import { describe, expect, it } from "vitest";
import { EVENT_TYPES } from "../contracts/index.ts";
import { eventTypesOf, warmUpEventParsers } from "./parser-warm-up.ts";

describe("event parser warm-up (in process: proves no transport)", () => {
  it("names every event of the aggregates asked for and no other", () => {
    const types = eventTypesOf(["runtime", "quota"]);
    expect(types).toEqual(EVENT_TYPES.filter((t) => t.startsWith("runtime.") || t.startsWith("quota.")));
    expect(types).toContain("runtime.fenced");
    expect(eventTypesOf(["run"]).every((t) => t.startsWith("run."))).toBe(true);
  });

  it("compiles each named schema, and nothing more once stopped", async () => {
    const types = eventTypesOf(["scaleout"]);
    expect(await warmUpEventParsers(types)).toBe(types.length);
    expect(await warmUpEventParsers(types, () => true)).toBe(0);
  });
});
