import { describe, expect, it } from "vitest";
import { TenantId, type DroverEvent } from "../../../contracts/index.ts";
import { exampleEvent, forensicsIds, ids } from "../../../test/support/example-events.ts";
import { isRecoveryEvent } from "./describe.ts";
import type { Fact } from "./fact.ts";
import { forensicsRow, ledgerRows, tenantsConcerned } from "./ledger.ts";

const fact = (event: DroverEvent, seq = 7, aggregateId = "agg-1"): Fact => ({
  stream: "DROVER",
  seq,
  storedAt: "2026-01-02T03:04:06.000Z",
  aggregateId,
  event,
});
const globex = TenantId.parse("globex");
const plan = exampleEvent("runtime.recovery-planned");
const twoTenantPlan: DroverEvent = {
  ...plan,
  data: { ...plan.data, items: [...plan.data.items, { ...plan.data.items[0]!, tenantId: globex }] },
};

describe("which tenants an event concerns (safe tenants never get recovery entries)", () => {
  it("gives a tenant-scoped event to its own tenant only", () => {
    expect(tenantsConcerned(fact(exampleEvent("run.admitted")), "someone-else")).toEqual([ids.tenant]);
  });

  it("gives a runtime event to the runtime's owner, and nobody's ledger a shared runtime's health facts", () => {
    expect(tenantsConcerned(fact(exampleEvent("runtime.suspected")), "owner-a")).toEqual(["owner-a"]);
    expect(tenantsConcerned(fact(exampleEvent("runtime.fenced")), undefined)).toEqual([]);
  });

  it("gives a recovery plan to exactly the tenants its items name, never to an owner with no item", () => {
    expect(tenantsConcerned(fact(twoTenantPlan), "owner-without-items")).toEqual([globex, ids.tenant].sort());
    const rows = ledgerRows(fact(twoTenantPlan), undefined);
    expect(rows.map((r) => [r._id, r.recovery, r.detail.itemCount])).toEqual([
      ["DROVER:7:globex", true, 1],
      [`DROVER:7:${ids.tenant}`, true, 2],
    ]);
    // One tenant's row says nothing about another tenant's items.
    expect(rows[0]!.summary).toBe("recovery planned for 1 of your items");
  });

  it("flags recovery entries: requeues, pause and resume, recovery placements and dispatches, forensics; not ordinary work", () => {
    const admitted = exampleEvent("run.admitted");
    expect(isRecoveryEvent(admitted)).toBe(false);
    expect(isRecoveryEvent({ ...admitted, data: { ...admitted.data, recovery: true } })).toBe(true);
    for (const t of [
      "run.requeued-for-resume",
      "exec.paused-for-recovery",
      "exec.resumed",
      "run.dispatched",
      "forensics.dag-resume-started",
    ] as const) {
      expect([t, isRecoveryEvent(exampleEvent(t))]).toEqual([t, t !== "run.dispatched"]);
    }
  });

  it("keys ledger and forensics rows by stream sequence and never copies step outputs", () => {
    const [row] = ledgerRows(fact(exampleEvent("exec.step-completed"), 9, ids.execution), undefined);
    expect(row).toMatchObject({ _id: `DROVER:9:${ids.tenant}`, seq: 9, executionId: ids.execution, recovery: false });
    expect(row!.detail).not.toHaveProperty("output");
    expect(forensicsRow(fact(exampleEvent("forensics.resume-context-seeded"), 11))).toMatchObject({
      _id: "DROVER:11",
      tenantId: ids.tenant,
      forensicsId: forensicsIds.inFlight,
      incidentId: ids.incident,
      detail: { completedSteps: 2 },
    });
    expect(forensicsRow(fact(exampleEvent("run.started")))).toBeUndefined();
  });
});
