import { describe, expect, it } from "vitest";
import { DagDefinition, type DroverEvent, type EventType } from "../../contracts/index.ts";
import { eventData } from "../../test/support/event-data.ts";
import { envelope } from "../../test/support/example-events.ts";
import { validateExecution, type ValidationResult } from "../replay-validation.ts";

// Pure: replay validation of condition and skip events, each case changing one fact of a sound journal.
const dag = DagDefinition.parse({
  steps: [
    { id: "a", kind: "compute" },
    { id: "gate", kind: "compute", dependsOn: ["a"], when: "input.go" },
    { id: "after", kind: "compute", dependsOn: ["gate"] },
  ],
});
const ev = (type: EventType, data: object): DroverEvent =>
  ({
    ...envelope(type),
    tenantId: "t1",
    writer: { service: "runtime", instanceId: "rt", runtimeInstanceId: "rt", epoch: 0 },
    data: eventData(type as never, data as never),
  }) as unknown as DroverEvent;
const started = ev("exec.started", {
  sharedRunId: "r1",
  localRunId: "l1",
  runtimeInstanceId: "rt",
  dagDigest: "d".repeat(64),
  stepCount: 3,
  epoch: 0,
});
const done = (stepId: string) =>
  ev("exec.step-completed", { stepId, attempt: 1, output: { ok: 1 }, outputDigest: "e".repeat(64), durationMs: 1 });
const cond = (result: boolean) => ev("exec.condition-evaluated", { stepId: "gate", result });
const skip = (stepId: string, reason: string) => ev("exec.step-skipped", { stepId, reason, detail: "x" });
const check = (events: DroverEvent[], input?: unknown): ValidationResult =>
  validateExecution({
    executionId: "e1",
    journal: events.map((event, i) => ({ seq: i + 1, event })),
    dag,
    ...(input === undefined ? {} : { input: { value: input } }),
  });
const first = (r: ValidationResult) => (r.kind === "divergence" ? [r.divergence.invariant, r.divergence.seq] : "match");
const sound = [
  started,
  done("a"),
  cond(false),
  skip("gate", "condition-false"),
  skip("after", "dependency-skipped"),
  ev("exec.completed", { outputDigest: "f".repeat(64) }),
];

describe("replay validation of conditions and skips", () => {
  it("a sound journal matches, and its condition re-derives from the recorded input", () => {
    expect(first(check(sound, { go: false }))).toBe("match");
    expect(first(check(sound, { go: true }))).toEqual(["condition-rederivation", 3]);
  });

  it("a condition evaluated before its dependency completed diverges", () => {
    expect(first(check([started, cond(false), done("a")]))).toEqual(["scheduler-divergence", 2]);
  });

  it("a step that runs although its condition was journaled false diverges", () => {
    expect(first(check([started, done("a"), cond(false), done("gate")]))).toEqual(["scheduler-divergence", 4]);
  });

  it("a skip the scheduler would not make (wrong reason, or a step whose dependencies completed) diverges", () => {
    expect(first(check([started, done("a"), cond(false), skip("gate", "dependency-skipped")]))).toEqual([
      "scheduler-divergence",
      4,
    ]);
    expect(first(check([started, done("a"), cond(true), done("gate"), skip("after", "dependency-skipped")]))).toEqual([
      "scheduler-divergence",
      5,
    ]);
  });

  it("exec.completed while a step is neither completed nor skipped diverges", () => {
    const early = [...sound.slice(0, 4), sound[5]!];
    expect(first(check(early))).toEqual(["scheduler-divergence", 5]);
  });
});
