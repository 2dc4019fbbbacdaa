import { describe, expect, it } from "vitest";
import { DagMemo, TenantId, TenantSettings, type DagInput, type EventOf } from "../../../contracts/index.ts";
import { deciderSpec, thenThrows } from "../../../test/support/decider-spec.ts";
import { exampleDagInput } from "../../../test/support/example-events.ts";
import { decideSubmission, submissionDecider, SubmitRunBody, type SubmitRun } from "./submission.ts";

const tenantId = TenantId.parse("acme");
const now = new Date("2026-03-04T05:06:07.000Z");
const command = (patch: Partial<SubmitRun> = {}, dag: unknown = exampleDagInput): SubmitRun => ({
  tenantId,
  body: { dag: dag as Record<string, unknown>, idempotencyKey: "k-1", labels: { team: "ml" } },
  settings: TenantSettings.parse({ tenantId, maxConcurrentRuns: 2, overQuota: "reject" }),
  sharedRunId: "run-abc",
  eventId: "ev-abc",
  openRuns: undefined,
  metadata: { now, requestId: "req-1", instanceId: "api-1" },
  ...patch,
});
const spec = deciderSpec(submissionDecider);
const submitted = (): EventOf<"run.submitted"> => decideSubmission(command(), submissionDecider.initialState())[0]!;

describe("run submission decider", () => {
  it("appends one run.submitted from the api, with the token's tenant, the minted ids and the injected clock", () => {
    const state = spec.given([]).when(command()).then([submitted()]);
    expect(state.status).toBe("submitted");
    expect(submitted()).toMatchObject({
      type: "run.submitted",
      tenantId: "acme",
      eventId: "ev-abc",
      occurredAt: now.toISOString(),
      correlationId: "run-abc",
      writer: { service: "api", instanceId: "api-1" },
      data: { sharedRunId: "run-abc", source: "api", idempotencyKey: "k-1", labels: { team: "ml" } },
    });
  });

  it("records the run's priority on run.submitted and refuses one outside 0-100 (docs/flow-control.md)", () => {
    const body = { ...command().body, priority: 9 };
    const [e] = decideSubmission(command({ body }), submissionDecider.initialState());
    expect(e?.data.priority).toBe(9);
    expect(SubmitRunBody.safeParse({ dag: {}, priority: 101 }).success).toBe(false);
    expect(SubmitRunBody.safeParse({ dag: {}, priority: 1.5 }).success).toBe(false);
  });

  it("appends nothing when the run already exists: a repeated idempotency key converges on the first submission", () => {
    spec.given([submitted()]).when(command()).then([]);
  });

  const invalid: Record<string, unknown> = {
    "a dependency cycle": {
      steps: [
        { id: "a", kind: "compute", dependsOn: ["b"] },
        { id: "b", kind: "compute", dependsOn: ["a"] },
      ],
    },
    "an unknown step kind": { steps: [{ id: "a", kind: "teleport" }] },
    "duplicate step ids": {
      steps: [
        { id: "a", kind: "compute" },
        { id: "a", kind: "compute" },
      ],
    },
    "a dependency on an unknown step": { steps: [{ id: "a", kind: "compute", dependsOn: ["ghost"] }] },
    "a step depending on itself": { steps: [{ id: "a", kind: "compute", dependsOn: ["a"] }] },
    "no steps": { steps: [] },
    "a step id that is not subject-safe": { steps: [{ id: "A.B", kind: "compute" }] },
    "params of the wrong kind": { steps: [{ id: "a", kind: "sleep", params: { prompt: "x" } }] },
    "an unknown top-level field": { steps: [{ id: "a", kind: "compute" }], tenantId: "other" },
    "a missing steps array": {},
  };
  for (const [what, dag] of Object.entries(invalid)) {
    it(`refuses a DAG with ${what} as dag-invalid, appending nothing`, () => {
      spec
        .given([])
        .when(command({}, dag))
        .then(thenThrows("dag-invalid", /the DAG is invalid/));
    });
  }

  it("names every broken rule of an invalid DAG in details.issues, with its path", () => {
    const dag: DagInput = {
      steps: [
        { id: "a", kind: "compute", dependsOn: ["a"] },
        { id: "b", kind: "compute", dependsOn: ["nope"] },
      ],
    };
    try {
      decideSubmission(command({}, dag), submissionDecider.initialState());
      expect.unreachable();
    } catch (e) {
      expect((e as { details: { issues: string[] } }).details.issues).toEqual([
        'dag.steps: step "a" depends on itself',
        'dag.steps: step "b" depends on unknown step "nope"',
      ]);
    }
  });

  it("validates the DAG before anything else: an invalid DAG under an existing key is still dag-invalid", () => {
    spec
      .given([submitted()])
      .when(command({}, { steps: [] }))
      .then(thenThrows("dag-invalid"));
  });

  it("refuses a new run with tenant-quota-exceeded when the tenant's unfinished runs reach its quota", () => {
    spec
      .given([])
      .when(command({ openRuns: 2 }))
      .then(thenThrows("tenant-quota-exceeded", /2 unfinished runs, its quota is 2/));
    spec
      .given([])
      .when(command({ openRuns: 1 }))
      .then([submitted()]);
  });

  it("answers a retry of an existing run even at the quota: a retry never counts twice", () => {
    spec
      .given([submitted()])
      .when(command({ openRuns: 2 }))
      .then([]);
  });

  it("leaves the quota to admission when the caller does not count (openRuns undefined)", () => {
    spec
      .given([])
      .when(command({ openRuns: undefined }))
      .then([submitted()]);
  });

  it("decides with a memo of checked DAGs as without it: the same event, one checked DAG for equal DAGs, the same refusals", () => {
    const dags = new DagMemo();
    const copy = () => JSON.parse(JSON.stringify(exampleDagInput)) as unknown;
    const [first] = decideSubmission(command({ dags }, copy()), submissionDecider.initialState());
    const [again] = decideSubmission(command({ dags }, copy()), submissionDecider.initialState());
    expect(first).toEqual(submitted());
    expect(again?.data.dag).toBe(first?.data.dag);
    const dag: DagInput = { steps: [{ id: "a", kind: "compute", dependsOn: ["a"] }] };
    for (let k = 0; k < 2; k++)
      spec
        .given([])
        .when(command({ dags }, dag))
        .then(thenThrows("dag-invalid", /step "a" depends on itself/));
  });
});
