import { describe, expect, it } from "vitest";
import { foldRun } from "../../../aggregates/run.ts";
import {
  DagDefinition,
  RuntimeInstanceId,
  SharedRunId,
  type DroverEvent,
  type EventType,
} from "../../../contracts/index.ts";
import { EXAMPLE_BUILDERS, ids } from "../../../test/support/example-events.ts";
import { childIds, childSubmission } from "./child-submission.ts";

const ev = (t: EventType, patch: Record<string, unknown> = {}) =>
  ({ ...EXAMPLE_BUILDERS[t](), ...patch }) as DroverEvent;
const childDag = { steps: [{ id: "c", kind: "compute" }] };
const dag = DagDefinition.parse({
  steps: [{ id: "per-region", kind: "run", dag: childDag, onParentCancel: "abandon", params: { $ref: "input" } }],
});
const submitted = ev("run.submitted");
const parentRun = (extra: DroverEvent[] = []) =>
  foldRun(
    [
      { ...submitted, data: { ...(submitted.data as object), dag } } as DroverEvent,
      ev("run.admitted"),
      ev("run.dispatched"),
      ev("run.started"),
      ...extra,
    ].map((event, i) => ({ seq: i + 1, event })),
  );
const derived = childIds(ids.tenant, ids.execution, "per-region", 1);
const decisionEvent = (patch: Record<string, unknown> = {}, writer?: string) => {
  const e = ev("exec.child-run-submitted");
  const data = { stepId: "per-region", attempt: 1, childRunId: derived.sharedRunId, input: { region: "eu" }, ...patch };
  return {
    ...e,
    data,
    ...(writer ? { writer: { ...e.writer, runtimeInstanceId: RuntimeInstanceId.parse(writer) } } : {}),
  } as DroverEvent;
};
const journal = (decision: DroverEvent, more: DroverEvent[] = []) =>
  [ev("exec.started"), decision, ...more].map((event, i) => ({ seq: 10 + i, event }));
const decide = (j: ReturnType<typeof journal>, parent = parentRun()) =>
  childSubmission(
    {
      tenantId: ids.tenant,
      executionId: ids.execution,
      seq: 11,
      data: j[1]!.event.data as Parameters<typeof childSubmission>[0]["data"],
    },
    j,
    parent,
  );

describe("admission's child-run submission from a parent's journal (pure: proves no transport)", () => {
  it("submits the child with the DAG and onParentCancel of the parent's own run step, the journaled input and the derived ids", () => {
    const r = decide(journal(decisionEvent()));
    expect(r).toMatchObject({
      kind: "submit",
      eventId: derived.eventId,
      parentRunId: ids.sharedRun,
      onParentCancel: "abandon",
      data: {
        sharedRunId: derived.sharedRunId,
        dag: DagDefinition.parse(childDag),
        source: "run-step",
        input: { region: "eu" },
        labels: { "drover.parent": ids.sharedRun },
        parent: { sharedRunId: ids.sharedRun, executionId: ids.execution, stepId: "per-region", attempt: 1 },
      },
    });
  });

  it("submits nothing for a child id that is not the derived one, another runtime's decision, a step that is not a run step, an ended attempt or an ended parent", () => {
    const skipped = [
      decide(journal(decisionEvent({ childRunId: SharedRunId.parse("run-forged") }))),
      decide(journal(decisionEvent({}, "rt-elsewhere"))),
      decide(journal(decisionEvent({ stepId: "b" }))),
      decide(
        journal(decisionEvent(), [
          ev("exec.step-failed", {
            data: { stepId: "per-region", attempt: 1, error: "timed out", code: "step-timeout" },
          }),
        ]),
      ),
      decide(journal(decisionEvent()), parentRun([ev("run.cancelled")])),
    ];
    expect(skipped.map((r) => r.kind)).toEqual(["skip", "skip", "skip", "skip", "skip"]);
    expect(skipped.map((r) => (r.kind === "skip" ? r.why : ""))).toEqual([
      expect.stringMatching(/not the derived id/),
      expect.stringMatching(/does not count this decision/),
      expect.stringMatching(/not a run step/),
      expect.stringMatching(/attempt 1 of step per-region has ended/),
      expect.stringMatching(/parent run ended cancelled/),
    ]);
  });
});
