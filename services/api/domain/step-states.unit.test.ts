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
import { stepStates } from "./step-states.ts";

// Pure: a run's step views from built events; no transport.
const writer: Writer = { service: "runtime", instanceId: "rt-1" };
const ctx = { tenantId: TenantId.parse("t1"), correlationId: "c1", causationId: "c1", writer };
let n = 0;
const ev = <T extends EventType>(type: T, raw: unknown) => ({
  event: buildEvent(type, eventData(type, raw) as DataOf<T>, ctx, { eventId: `e-${++n}`, now: new Date(0) }),
});
const dag = DagDefinition.parse({
  steps: [
    { id: "a", kind: "compute" },
    { id: "each", kind: "compute", dependsOn: ["a"], map: { over: "input.items", maxConcurrency: 2 } },
  ],
});
const D = "0".repeat(64);
const done = (stepId: string) =>
  ev("exec.step-completed", { stepId, attempt: 1, output: {}, outputDigest: D, durationMs: 1 });
const failed = (stepId: string, retryAt?: string) =>
  ev("exec.step-failed", { stepId, attempt: 1, error: "boom", ...(retryAt ? { retryAt } : {}) });
const itemsOf = (events: ReturnType<typeof ev>[], status = "running") =>
  stepStates(dag, events, status).map((s) => [s.id, s.items]);

describe("stepStates: a map step's item counts from the journal (pure, proves no transport)", () => {
  const started = ev("exec.started", {
    sharedRunId: "r0",
    localRunId: "l0",
    runtimeInstanceId: "rt",
    dagDigest: D,
    stepCount: 2,
    epoch: 0,
  });
  const expanded = ev("exec.map-expanded", {
    stepId: "each",
    count: 5,
    itemsDigest: D,
    maxConcurrency: 2,
    toleratedFailures: 1,
  });

  it("a map step not expanded yet has no total; any other step has no item counts", () => {
    expect(itemsOf([started, done("a")])).toEqual([
      ["a", null],
      ["each", { total: null, completed: 0, failed: 0, open: 0 }],
    ]);
  });

  it("counts completed items, failed items with no attempts left, and the rest as open (a retrying item is open)", () => {
    const events = [started, done("a"), expanded, done("each--0"), done("each--3"), failed("each--1")];
    events.push(failed("each--2", "2026-01-01T00:00:00.000Z"));
    expect(itemsOf(events)[1]).toEqual(["each", { total: 5, completed: 2, failed: 1, open: 2 }]);
    // An item that failed once and then completed counts as completed; another step's ids never count.
    events.push(done("each--2"), done("eachx--4"));
    expect(itemsOf(events)[1]).toEqual(["each", { total: 5, completed: 3, failed: 1, open: 1 }]);
  });
});
