import { describe, expect, it } from "vitest";
import { defineWorker, isNonRetryable, isWorker, NonRetryableError } from "./index.ts";

/** The SDK alone: no transport. */
describe("the step SDK (pure, proves no transport)", () => {
  it("defineWorker brands a frozen worker; handler names must be lowercase [a-z0-9-]", () => {
    const w = defineWorker({ steps: { "chunk-text": () => ({ ok: true }) } });
    expect(isWorker(w)).toBe(true);
    expect(isWorker({ steps: {} })).toBe(false);
    expect(Object.isFrozen(w.steps)).toBe(true);
    expect(() => defineWorker({ steps: { Chunk: () => null } })).toThrow(/not lowercase/);
  });

  it("NonRetryableError is recognised across copies of the SDK by its marker", () => {
    expect(isNonRetryable(new NonRetryableError("no"))).toBe(true);
    expect(isNonRetryable(Object.assign(new Error("x"), { nonRetryable: true }))).toBe(true);
    expect(isNonRetryable(new Error("x"))).toBe(false);
  });
});
