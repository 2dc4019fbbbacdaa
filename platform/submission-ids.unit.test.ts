import { describe, expect, it } from "vitest";
import { EventId, SharedRunId } from "../contracts/index.ts";
import { submissionIds } from "./submission-ids.ts";

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
