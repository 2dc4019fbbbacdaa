import { describe, expect, it } from "vitest";
import { DroverError } from "../contracts/index.ts";
import { contractViolation } from "../contracts/index.ts";
import { outcomeOf } from "./consumer-outcome.ts";

const policy = { maxDeliver: 4, backoffMs: [100, 500, 2000] };

describe("handler outcome → ack / nak / term", () => {
  it("acks a delivery whose handler succeeded", () => {
    expect(outcomeOf(undefined, 1, policy)).toEqual({ kind: "ack" });
  });

  it("terms non-retryable typed errors, contract violations included, with code and message as the reason", () => {
    expect(outcomeOf({ error: contractViolation("event", "bad") }, 1, policy)).toEqual({
      kind: "term",
      reason: "contract-violation: event is invalid: bad",
    });
    expect(outcomeOf({ error: new DroverError("execution-ownership-lost", "x") }, 1, policy)).toMatchObject({
      kind: "term",
    });
    expect(
      outcomeOf({ error: new DroverError("tenant-quota-exceeded", "y", { retryable: false }) }, 1, policy),
    ).toMatchObject({ kind: "term" });
  });

  it("naks retryable typed errors and unknown errors with backoff by delivery count, repeating the last delay", () => {
    const retryable = new DroverError("version-conflict", "moved");
    expect(outcomeOf({ error: retryable }, 1, policy)).toEqual({ kind: "nak", delayMs: 100 });
    expect(outcomeOf({ error: new Error("ECONNRESET") }, 2, policy)).toEqual({ kind: "nak", delayMs: 500 });
    expect(outcomeOf({ error: "thrown string" }, 3, policy)).toEqual({ kind: "nak", delayMs: 2000 });
    expect(outcomeOf({ error: retryable }, 9, { maxDeliver: -1, backoffMs: [100, 500, 2000] })).toEqual({
      kind: "nak",
      delayMs: 2000,
    });
  });

  it("gives up at once on the last allowed delivery so the dead letter is recorded without waiting", () => {
    expect(outcomeOf({ error: new Error("still down") }, 4, policy)).toEqual({ kind: "nak", delayMs: 0 });
  });

  it("truncates a long term reason", () => {
    const o = outcomeOf({ error: new DroverError("contract-violation", "x".repeat(1000)) }, 1, policy);
    expect(o.kind === "term" && o.reason.length).toBe(256);
  });
});
