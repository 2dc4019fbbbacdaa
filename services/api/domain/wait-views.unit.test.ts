import { describe, expect, it } from "vitest";
import {
  buildEvent,
  DagDefinition,
  TenantId,
  type DataOf,
  type EventType,
  type Writer,
} from "../../../contracts/index.ts";
import { eventData } from "../../../test/support/event-data.ts";
import { waitViews } from "./wait-views.ts";

// Pure: a run's wait views from built events; no transport.
const writer: Writer = { service: "api", instanceId: "api-1" };
const ctx = { tenantId: TenantId.parse("t1"), correlationId: "c1", causationId: "c1", writer };
let n = 0;
const ev = <T extends EventType>(seq: number, type: T, raw: unknown) => ({
  seq,
  event: buildEvent(type, eventData(type, raw) as DataOf<T>, ctx, { eventId: `e-${++n}`, now: new Date(0) }),
});
const dag = DagDefinition.parse({
  steps: [
    { id: "a", kind: "compute" },
    {
      id: "review",
      kind: "wait",
      dependsOn: ["a"],
      params: { name: "approval", timeoutMs: 1000, resolvers: ["role:x"] },
    },
  ],
});
const sig = ev(3, "run.signal-received", {
  name: "approval",
  by: "tenant:t1",
  signalId: "s-1",
  payload: { ok: true },
  payloadDigest: "c".repeat(64),
});
const opened = ev(5, "exec.wait-opened", { stepId: "review", name: "approval", timeoutAt: "2026-01-01T00:00:01.000Z" });
const resolved = (by: "signal" | "timeout") =>
  ev(6, "exec.wait-resolved", {
    stepId: "review",
    name: "approval",
    by,
    ...(by === "signal" ? { principal: "tenant:t1", payloadDigest: "c".repeat(64), signalSeq: 3 } : {}),
  });

describe("waitViews: what GET /v1/runs/:id shows of a run's waits (pure, proves no transport)", () => {
  it("pending with an early signal, open, resolved, timed out, and ended when the run ended first", () => {
    const view = (events: Parameters<typeof waitViews>[1], status = "running") => waitViews(dag, events, status)[0];
    expect(view([sig])).toMatchObject({
      state: "pending",
      timeoutAt: null,
      resolvers: ["role:x"],
      signal: { by: "tenant:t1", signalId: "s-1", seq: 3 },
    });
    expect(view([opened])).toMatchObject({
      state: "open",
      timeoutAt: "2026-01-01T00:00:01.000Z",
      signal: null,
    });
    expect(view([sig, opened, resolved("signal")])).toMatchObject({ state: "resolved" });
    expect(view([opened, resolved("timeout")], "failed")).toMatchObject({ state: "timed-out" });
    expect(view([opened], "cancelled")).toMatchObject({ state: "ended" });
  });
  it("superseded when a trigger-any dependent went on another wait, skipped when its condition or trigger skipped it", () => {
    const skipped = (reason: "superseded" | "condition-false") =>
      ev(7, "exec.step-skipped", { stepId: "review", reason, detail: "d" });
    expect(waitViews(dag, [opened, skipped("superseded")], "completed")[0]).toMatchObject({ state: "superseded" });
    expect(waitViews(dag, [skipped("condition-false")], "running")[0]).toMatchObject({ state: "skipped" });
  });
  it("lists only wait steps", () => {
    expect(waitViews(dag, [], "running").map((w) => w.stepId)).toEqual(["review"]);
  });
});
