import { describe, expect, it } from "vitest";
import { firstByExpectation } from "./first-by-expectation.ts";

describe("first submission by expectation (pure, no transport)", () => {
  const h = (m: Record<string, string>) => ({ get: (n: string) => m[n] ?? "" });
  const subject = "drover.run.t.r1.submitted";
  it("trusts Nats-Expected-Last-Subject-Sequence 0 over the run's own subject or wildcard, nothing else", () => {
    const seq0 = { "Nats-Expected-Last-Subject-Sequence": "0" };
    expect(firstByExpectation(h(seq0), subject)).toBe(true);
    for (const scope of ["drover.run.t.r1.>", "drover.run.t.r1.*", subject])
      expect(firstByExpectation(h({ ...seq0, "Nats-Expected-Last-Subject-Sequence-Subject": scope }), subject)).toBe(
        true,
      );
    expect(
      firstByExpectation(h({ ...seq0, "Nats-Expected-Last-Subject-Sequence-Subject": "drover.run.t.r2.>" }), subject),
    ).toBe(false);
    expect(firstByExpectation(h({ "Nats-Expected-Last-Subject-Sequence": "7" }), subject)).toBe(false);
    expect(firstByExpectation(h({}), subject)).toBe(false);
    expect(firstByExpectation(undefined, subject)).toBe(false);
  });
});
