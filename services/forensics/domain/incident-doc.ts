import type { DroverEvent } from "../../../contracts/index.ts";
import type { IncidentDoc, IncidentItem } from "../../../contracts/read-models.ts";
import { positionOf, type Fact } from "./fact.ts";

type IncidentEvent = Extract<DroverEvent, { type: "runtime.suspected" | "runtime.fenced" | "runtime.fence-failed" | "runtime.recovery-planned" | `forensics.${string}` }>;

/** Whether `e` belongs to an incident's document (the runtime's failure facts and every item's forensics). */
export function isIncidentEvent(e: DroverEvent): e is IncidentEvent {
  return e.type === "runtime.suspected" || e.type === "runtime.fenced" || e.type === "runtime.fence-failed" || e.type === "runtime.recovery-planned"
    || e.type.startsWith("forensics.");
}

/** The incident an incident event belongs to. */
export const incidentIdOf = (e: IncidentEvent): string => e.data.incidentId;

// An incident only moves forward: a late or repeated fact never reopens an earlier stage.
const STAGE = { "suspected": 0, "fence-failed": 1, "fenced": 2, "recovery-planned": 3 } as const;
const advance = (cur: IncidentDoc["status"], next: IncidentDoc["status"]) => (STAGE[next] > STAGE[cur] ? next : cur);

function mergeItem(items: readonly IncidentItem[], forensicsId: string, make: () => IncidentItem, patch: (i: IncidentItem) => IncidentItem): IncidentItem[] {
  const i = items.findIndex((x) => x.forensicsId === forensicsId);
  return i < 0 ? [...items, patch(make())] : items.map((x, j) => (j === i ? patch(x) : x));
}

/**
 * Folds a runtime failure fact or a forensics event into its incident. The runtime's facts set
 * the stages; `recovery-planned` lists the items; each forensics event advances its item (and
 * creates it when the plan has not been seen, so the order of the two never matters).
 * `tenantIds` is exactly the tenants with an item. Idempotent by stream sequence. Pure.
 */
export function evolveIncidentDoc(doc: IncidentDoc | undefined, f: Fact<IncidentEvent>, ownerTenantId: string | undefined): IncidentDoc {
  const e = f.event;
  const runtimeInstanceId = e.type.startsWith("runtime.") ? f.aggregateId : (e as Extract<IncidentEvent, { type: `forensics.${string}` }>).data.failedRuntimeInstanceId;
  const s: IncidentDoc = doc ?? { _id: e.data.incidentId, incidentId: e.data.incidentId, runtimeInstanceId, status: "suspected", tenantIds: [],
    fenceFailures: [], items: [], firstSeq: f.seq, lastSeq: 0 };
  if (f.seq <= s.lastSeq) return s;
  const owned = s.ownerTenantId === undefined && ownerTenantId !== undefined ? { ownerTenantId } : {};
  const next = apply(s, e, f);
  return { ...next, ...owned, tenantIds: [...new Set(next.items.map((i) => i.tenantId))].sort(), lastSeq: f.seq };
}

function apply(s: IncidentDoc, e: IncidentEvent, f: Fact<IncidentEvent>): IncidentDoc {
  const at = positionOf(f);
  switch (e.type) {
    case "runtime.suspected":
      return { ...s, status: advance(s.status, "suspected"), suspected: s.suspected ?? { ...at, reasonCode: e.data.reason.code, reasonDetail: e.data.reason.detail,
        ...(e.data.hostIncarnation ? { hostIncarnation: e.data.hostIncarnation } : {}) } };
    case "runtime.fenced":
      return { ...s, status: advance(s.status, "fenced"), fenced: s.fenced ?? { ...at, hostIncarnation: e.data.hostIncarnation, proof: { ...e.data.proof } } };
    case "runtime.fence-failed":
      return { ...s, status: advance(s.status, "fence-failed"),
        fenceFailures: [...s.fenceFailures, { ...at, reasonCode: e.data.reason.code, reasonDetail: e.data.reason.detail, attempt: e.data.attempt }] };
    case "runtime.recovery-planned": {
      let items = [...s.items];
      for (const p of e.data.items) {
        items = mergeItem(items, p.forensicsId, () => ({ forensicsId: p.forensicsId, tenantId: p.tenantId, sharedRunId: p.sharedRunId, localRunId: p.localRunId,
          ...(p.executionId ? { executionId: p.executionId } : {}), class: p.class }), (i) => ({ ...i, plannedSeq: i.plannedSeq ?? f.seq }));
      }
      return { ...s, status: advance(s.status, "recovery-planned"), planned: s.planned ?? { ...at, itemCount: e.data.items.length }, items };
    }
    default: {
      const x = e.data;
      const items = mergeItem(s.items, x.forensicsId, () => ({ forensicsId: x.forensicsId, tenantId: e.tenantId, sharedRunId: x.sharedRunId,
        localRunId: x.failedLocalRunId, ...(x.executionId ? { executionId: x.executionId } : {}), class: x.class }),
      (i) => ({ ...i, lastType: e.type, lastSeq: f.seq, ...(e.type === "forensics.execution-recovery-completed" ? { outcome: e.data.outcome } : {}) }));
      return { ...s, items };
    }
  }
}
