import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fuzzCase, runCase } from "../fuzz/event-fuzz.ts";

/**
 * The short run of the event fuzz target (test/fuzz/event-fuzz.ts; `make fuzz` runs it long):
 * mutated and random messages through decoding, every follower's fold and replay validation.
 * Pure; proves no transport.
 */
describe("event decoding and folds never throw on mutated events (bounded fuzz; proves no transport)", () => {
  it("decoding fails only with contract-violation and no fold, index or validator throws (100 cases)", () => {
    let decoded = 0;
    let rejected = 0;
    fc.assert(
      fc.property(fuzzCase, (messages) => {
        const r = runCase(messages);
        decoded += r.decoded;
        rejected += r.rejected;
      }),
      { numRuns: 100, seed: Number(process.env.FUZZ_SEED ?? 14) },
    );
    // Both paths were exercised: events that decode and reach the folds, and refused ones.
    expect(decoded).toBeGreaterThan(100);
    expect(rejected).toBeGreaterThan(100);
  });
});
