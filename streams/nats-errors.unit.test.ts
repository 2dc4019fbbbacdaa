import { JetStreamApiError } from "@nats-io/jetstream";
import { RequestError, TimeoutError } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { DroverError } from "../contracts/index.ts";
import { isJetStreamUnavailable, toStoreError } from "./nats-errors.ts";

describe("JetStream failures → drover's error catalogue", () => {
  it("maps no answer (timeout, no responders) to retryable event-store-unavailable", () => {
    for (const e of [new TimeoutError(), new RequestError("no responders", { cause: new TimeoutError() })]) {
      const d = toStoreError(e, "appending");
      expect(d).toMatchObject({ code: "event-store-unavailable", retryable: true });
      expect(d.cause).toBe(e);
    }
  });

  it("maps a JetStream refusal to non-retryable event-store-unavailable carrying the server's code", () => {
    const d = toStoreError(
      new JetStreamApiError({ code: 400, err_code: 10054, description: "message size exceeds maximum allowed" }),
      "appending",
      { subject: "x" },
    );
    expect(d).toMatchObject({
      code: "event-store-unavailable",
      retryable: false,
      details: { subject: "x", jsCode: 10054 },
    });
    expect(d.message).toContain("message size exceeds maximum allowed");
  });

  it("passes typed errors through and treats unknown errors as retryable infrastructure faults", () => {
    const typed = new DroverError("version-conflict", "moved");
    expect(toStoreError(typed, "appending")).toBe(typed);
    expect(toStoreError(new Error("socket hang up"), "appending")).toMatchObject({
      code: "event-store-unavailable",
      retryable: true,
    });
  });

  it("counts 'temporarily unavailable' (10008: a cluster electing a leader) and no answer as worth retrying, other refusals not (pure: proves no transport)", () => {
    const unavailable = new JetStreamApiError({
      code: 503,
      err_code: 10008,
      description: "JetStream system temporarily unavailable",
    });
    expect(isJetStreamUnavailable(unavailable)).toBe(true);
    expect(isJetStreamUnavailable(new TimeoutError())).toBe(true);
    expect(
      isJetStreamUnavailable(new JetStreamApiError({ code: 400, err_code: 10054, description: "too large" })),
    ).toBe(false);
    expect(isJetStreamUnavailable(new Error("boom"))).toBe(false);
  });

  it("counts a peer the meta leader has not heard from yet (10005 'peer offline': a fresh cluster node) as worth retrying, a placement refused for other reasons not (pure: proves no transport)", () => {
    // The description as the proof tier saw it on a 3-node cluster right after start-up (CI, session 31).
    const offline = new JetStreamApiError({
      code: 400,
      err_code: 10005,
      description: "no suitable peers for placement, peer offline",
    });
    expect(isJetStreamUnavailable(offline)).toBe(true);
    const noRoom = new JetStreamApiError({
      code: 400,
      err_code: 10005,
      description: "no suitable peers for placement, insufficient resources",
    });
    expect(isJetStreamUnavailable(noRoom)).toBe(false);
  });
});
