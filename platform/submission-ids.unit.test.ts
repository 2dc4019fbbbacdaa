import { describe, expect, it } from "vitest";
import { EventId, SharedRunId } from "../contracts/index.ts";
import { randomIdGenerator, submissionIds } from "./submission-ids.ts";

let n = 0;
const counter = () => `id${++n}`;

describe("submission ids", () => {
  it("derives the same run and event ids from the same (tenant, idempotency key), and valid 63-character ids", () => {
    const a = submissionIds("acme", "order-42", counter);
    expect(submissionIds("acme", "order-42", counter)).toEqual(a);
    expect(SharedRunId.safeParse(a.sharedRunId).success).toBe(true);
    expect(EventId.safeParse(a.eventId).success).toBe(true);
    expect(a.sharedRunId).toHaveLength(63);
  });

  it("never lets two tenants' identical keys, or ambiguous (tenant, key) splits, meet on one run", () => {
    expect(submissionIds("acme", "k", counter).sharedRunId).not.toBe(submissionIds("globex", "k", counter).sharedRunId);
    expect(submissionIds("a", "b:c", counter).sharedRunId).not.toBe(submissionIds("a-b", "c", counter).sharedRunId);
  });

  it("takes fresh ids from the injected generator when there is no key", () => {
    expect(submissionIds("acme", undefined, () => "fixed")).toEqual({ sharedRunId: "run-fixed", eventId: "ev-fixed" });
  });
});

describe("randomIdGenerator (pure; ids drawn from a pool refilled every 200)", () => {
  it("gives 40 lowercase hex digits, all distinct across several pool refills", () => {
    const ids = Array.from({ length: 1_001 }, () => randomIdGenerator());
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{40}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
