import { describe, expect, it } from "vitest";
import { DagDefinition, type DroverEvent, type EventType } from "../../contracts/index.ts";
import { eventData } from "../../test/support/event-data.ts";
import { envelope } from "../../test/support/example-events.ts";
import { validateExecution, type ValidationResult } from "../replay-validation.ts";
import { canonicalJson } from "../step-inputs.ts";
import { createHash } from "node:crypto";

// Pure (proves no transport): replay validation of step cache hits, each case changing one fact of a sound journal.
const digest = (s: string) => createHash("sha256").update(s).digest("hex");
const dagWith = (cache: object | undefined) =>
  DagDefinition.parse({
    steps: [
      { id: "a", kind: "compute" },
      { id: "p", kind: "custom", handler: "price", dependsOn: ["a"], ...(cache ? { cache } : {}) },
    ],
  });
const ev = (type: EventType, data: object, occurredAt = "2026-01-01T00:00:10.000Z"): DroverEvent =>
  ({
    ...envelope(type),
    occurredAt,
    tenantId: "t1",
    writer: { service: "runtime", instanceId: "rt", runtimeInstanceId: "rt", epoch: 0 },
    data: eventData(type as never, data as never),
  }) as unknown as DroverEvent;
const startedFor = (dag: DagDefinition) =>
  ev("exec.started", {
    sharedRunId: "r1",
    localRunId: "l1",
    runtimeInstanceId: "rt",
    dagDigest: digest(canonicalJson(dag)),
    stepCount: 2,
    epoch: 0,
  });
/** Stands for the exec.started of the DAG `check` validates against (replaced there). */
const started = ev("exec.started", {
  sharedRunId: "r1",
  localRunId: "l1",
  runtimeInstanceId: "rt",
  dagDigest: "d".repeat(64),
  stepCount: 2,
  epoch: 0,
});
const aOutput = {
  digest: digest(canonicalJson({ step: "a", kind: "compute", params: { durationMs: 0, busy: false }, deps: [] })),
};
const doneA = ev("exec.step-completed", {
  stepId: "a",
  attempt: 1,
  output: aOutput,
  outputDigest: digest(canonicalJson(aOutput)),
  durationMs: 1,
});
const output = { cents: 300 };
const hit = (storedAt: string, extra: object = {}) =>
  ev("exec.step-reused", {
    stepId: "p",
    fromRun: "r0",
    fromExecutionId: "e0",
    output,
    outputDigest: digest(canonicalJson(output)),
    cache: { key: "b".repeat(64), fromStepId: "price", storedAt },
    ...extra,
  });
const check = (events: DroverEvent[], dag = dagWith({ ttlMs: 60_000 })): ValidationResult =>
  validateExecution({
    executionId: "e1",
    journal: events.map((event, i) => ({ seq: i + 1, event: event === started ? startedFor(dag) : event })),
    dag,
    digest,
  });
const first = (r: ValidationResult) => (r.kind === "divergence" ? [r.divergence.invariant, r.divergence.seq] : "match");
const end = ev("exec.completed", { outputDigest: "f".repeat(64) });

describe("replay validation of step cache hits", () => {
  it("a cache hit after an executed step, for a step declaring cache, within its TTL, matches", () => {
    expect(first(check([started, doneA, hit("2026-01-01T00:00:00.000Z"), end]))).toBe("match");
  });

  it("a cache hit for a step that declares no cache diverges at the hit", () => {
    expect(first(check([started, doneA, hit("2026-01-01T00:00:00.000Z"), end], dagWith(undefined)))).toEqual([
      "scheduler-divergence",
      3,
    ]);
  });

  it("a cache hit before its step's dependency completed diverges (the scheduler never offered the step)", () => {
    expect(first(check([started, hit("2026-01-01T00:00:00.000Z"), doneA, end]))).toEqual(["scheduler-divergence", 2]);
  });

  it("a cache hit whose output is older than the step's ttlMs when journaled diverges (the hit is journaled at 00:00:10)", () => {
    const stored = hit("2026-01-01T00:00:04.000Z");
    expect(first(check([started, doneA, stored, end], dagWith({ ttlMs: 6_000 })))).toBe("match");
    expect(first(check([started, doneA, stored, end], dagWith({ ttlMs: 5_999 })))).toEqual(["scheduler-divergence", 3]);
  });

  it("a cache hit whose outputDigest is not the digest of the output it carries diverges", () => {
    const bad = hit("2026-01-01T00:00:00.000Z", { outputDigest: "0".repeat(64) });
    expect(first(check([started, doneA, bad, end]))).toEqual(["output-rederivation", 3]);
  });
});
