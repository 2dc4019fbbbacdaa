import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { DagDefinition, type DroverEvent, type EventType } from "../../contracts/index.ts";
import { eventData } from "../../test/support/event-data.ts";
import { envelope } from "../../test/support/example-events.ts";
import { validateExecution, type ValidationResult } from "../replay-validation.ts";
import { canonicalJson } from "../step-inputs.ts";

// Pure: replay validation of a run step's journaled child submission (no transport).
const dag = DagDefinition.parse({
  steps: [
    { id: "a", kind: "sleep", params: { durationMs: 0 } },
    { id: "sub", kind: "run", dependsOn: ["a"], dag: { steps: [{ id: "c", kind: "compute" }] } },
  ],
});
const ev = (type: EventType, data: object): DroverEvent =>
  ({
    ...envelope(type),
    tenantId: "t1",
    writer: { service: "runtime", instanceId: "rt", runtimeInstanceId: "rt", epoch: 0 },
    data: eventData(type as never, data as never),
  }) as unknown as DroverEvent;
const digest = (s: string) => createHash("sha256").update(s).digest("hex");
const childOf = (stepId: string, attempt: number) =>
  `run-${digest(`2:t1:child:e1:${stepId}${attempt === 1 ? "" : `:${attempt}`}`).slice(0, 59)}`;
const started = ev("exec.started", {
  sharedRunId: "r1",
  localRunId: "l1",
  runtimeInstanceId: "rt",
  dagDigest: digest(canonicalJson(dag)),
  stepCount: 2,
  epoch: 0,
});
const done = (stepId: string) =>
  ev("exec.step-completed", { stepId, attempt: 1, output: { ok: 1 }, outputDigest: digest('{"ok":1}'), durationMs: 1 });
const submitted = (stepId: string, childRunId = childOf(stepId, 1)) =>
  ev("exec.child-run-submitted", { stepId, attempt: 1, childRunId });
const check = (events: DroverEvent[]): ValidationResult =>
  validateExecution({ executionId: "e1", journal: events.map((event, i) => ({ seq: i + 1, event })), dag, digest });
const first = (r: ValidationResult) => (r.kind === "divergence" ? [r.divergence.invariant, r.divergence.seq] : "match");

describe("replay validation of child-run submissions", () => {
  it("a sound journal (child submitted once, after its dependency, with the derived id) matches", () => {
    expect(first(check([started, done("a"), submitted("sub")]))).toBe("match");
  });

  it("a child id that is not derived from (tenant, execution, step, attempt) diverges", () => {
    expect(first(check([started, done("a"), submitted("sub", childOf("sub", 2))]))).toEqual([
      "child-run-derivation",
      3,
    ]);
  });

  it("a submission before the step's dependency completed, for a non-run step, or a second one, diverges", () => {
    expect(first(check([started, submitted("sub"), done("a")]))).toEqual(["scheduler-divergence", 2]);
    expect(first(check([started, submitted("a", childOf("a", 1))]))).toEqual(["scheduler-divergence", 2]);
    expect(first(check([started, done("a"), submitted("sub"), submitted("sub")]))).toEqual(["journal-fold", 4]);
  });
});
