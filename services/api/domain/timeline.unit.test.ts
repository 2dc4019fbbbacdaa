import { describe, expect, it } from "vitest";
import type { ExecutionDoc, IncidentDoc, IncidentItem, LedgerEntry, RunDoc } from "../../../contracts/read-models.ts";
import { incidentForTenant } from "./forensics-view.ts";
import { runTimeline } from "./timeline.ts";

const at = "2026-01-02T03:04:05.678Z";
const row = (seq: number, type: string, detail: LedgerEntry["detail"] = {}): LedgerEntry => ({
  _id: `S:${seq}:acme`,
  tenantId: "acme",
  stream: "S",
  seq,
  at,
  storedAt: at,
  type,
  aggregateId: type.startsWith("exec.") ? "ex-1" : "run-1",
  recovery: false,
  summary: type,
  detail,
});
const run: RunDoc = {
  _id: "acme:run-1",
  tenantId: "acme",
  sharedRunId: "run-1",
  status: "completed",
  stepCount: 1,
  labels: [],
  placements: [],
  executionIds: ["ex-1"],
  forensicsIds: [],
  incidentIds: ["inc-1"],
  scaleOutRequestIds: [],
  firstSeq: 1,
  lastSeq: 9,
};
const incident: IncidentDoc = {
  _id: "inc-1",
  incidentId: "inc-1",
  runtimeInstanceId: "rt-1",
  ownerTenantId: "globex",
  status: "recovery-planned",
  tenantIds: ["acme", "initech"],
  fenceFailures: [],
  firstSeq: 5,
  lastSeq: 7,
  suspected: { seq: 5, at, storedAt: at, reasonCode: "host-exited", reasonDetail: "" },
  planned: { seq: 7, at, storedAt: at, itemCount: 3 },
};
const items: IncidentItem[] = [
  {
    _id: "inc-1:f-a",
    incidentId: "inc-1",
    forensicsId: "f-a",
    tenantId: "acme",
    sharedRunId: "run-1",
    localRunId: "lr-1",
    class: "local-queued",
    lastSeq: 7,
  },
  {
    _id: "inc-1:f-i",
    incidentId: "inc-1",
    forensicsId: "f-i",
    tenantId: "initech",
    sharedRunId: "run-9",
    localRunId: "lr-9",
    class: "local-queued",
    lastSeq: 7,
  },
  {
    _id: "inc-2:f-b",
    incidentId: "inc-2",
    forensicsId: "f-b",
    tenantId: "acme",
    sharedRunId: "run-2",
    localRunId: "lr-2",
    class: "local-queued",
    lastSeq: 8,
  },
];

describe("run timeline and tenant-scoped incidents", () => {
  it("collapses each stretch of step events into one entry, apart on either side of a failure, calling out duplicates", () => {
    const rows = [
      row(1, "run.submitted"),
      row(2, "exec.step-completed", { stepId: "a" }),
      row(3, "exec.step-failed", { stepId: "b" }),
      row(4, "exec.step-completed", { stepId: "b" }),
      row(6, "exec.step-completed", { stepId: "a" }),
      row(9, "run.completed"),
    ];
    const exec: ExecutionDoc = {
      _id: "acme:ex-1",
      tenantId: "acme",
      executionId: "ex-1",
      status: "completed",
      epoch: 1,
      owners: [],
      pauses: [],
      firstSeq: 2,
      lastSeq: 8,
    };
    const t = runTimeline(run, [exec], rows, [incidentForTenant(incident, items, "acme")!]);
    expect(t.executions).toEqual([
      {
        executionId: "ex-1",
        status: "completed",
        epoch: 1,
        owners: [],
        pauses: [],
        firstSeq: 2,
        lastSeq: 8,
        completedSteps: 2,
        duplicateCompletions: 1,
        failedAttempts: 1,
      },
    ]);
    expect(t.chain.map((e) => [e.seq, e.phase, e.type])).toEqual([
      [1, "submission", "run.submitted"],
      [4, "steps", "exec.steps"],
      [5, "failure", "runtime.suspected"],
      [6, "steps", "exec.steps"],
      [7, "recovery", "runtime.recovery-planned"],
      [9, "completion", "run.completed"],
    ]);
    expect(t.chain[1]!.summary).toBe("2 steps completed (a, b), 1 failed attempts");
    expect(t.chain[3]!.summary).toBe("1 step completed (a), 0 failed attempts, 1 DUPLICATE completions");
    expect(t.chain[4]!.summary).toBe("recovery planned for 1 of your items");
  });

  it("shows a tenant only its own items of an incident, and a tenant with none no incident at all", () => {
    const mine = incidentForTenant(incident, items, "acme")!;
    expect(mine.items.map((i) => i.id)).toEqual(["inc-1:f-a"]);
    expect(mine).not.toHaveProperty("tenantIds");
    expect(mine).not.toHaveProperty("ownerTenantId");
    expect(incidentForTenant(incident, items, "globex")).toBeUndefined();
    expect(incidentForTenant(undefined, items, "acme")).toBeUndefined();
  });
});
