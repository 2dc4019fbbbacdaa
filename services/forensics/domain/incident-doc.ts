import { isPlannedStopId, type DroverEvent } from "../../../contracts/index.ts";
import type { IncidentDoc, IncidentItem } from "../../../contracts/read-models.ts";
import { addOnce, positionOf, type Fact } from "./fact.ts";

type IncidentEvent = Extract<
  DroverEvent,
  {
    type:
      | "runtime.suspected"
      | "runtime.fenced"
      | "runtime.fence-failed"
      | "runtime.recovery-planned"
      | `forensics.${string}`;
  }
>;
type ForensicsEvent = Extract<DroverEvent, { type: `forensics.${string}` }>;

/** Whether `e` belongs to an incident (the runtime's failure facts and every item's forensics), not to a planned stop. */
export function isIncidentEvent(e: DroverEvent): e is IncidentEvent {
  const is =
    e.type === "runtime.suspected" ||
    e.type === "runtime.fenced" ||
    e.type === "runtime.fence-failed" ||
    e.type === "runtime.recovery-planned" ||
    e.type.startsWith("forensics.");
  // Work moved after a planned stop (host-stopped) carries a `stop-…` id: no failure, no incident.
  return is && !isPlannedStopId((e.data as { incidentId: string }).incidentId);
}

// An incident only moves forward: a late or repeated fact never reopens an earlier stage.
const STAGE = { suspected: 0, "fence-failed": 1, fenced: 2, "recovery-planned": 3 } as const;
const advance = (cur: IncidentDoc["status"], next: IncidentDoc["status"]) => (STAGE[next] > STAGE[cur] ? next : cur);
const isForensics = (e: IncidentEvent): e is ForensicsEvent => e.type.startsWith("forensics.");

/**
 * Folds a runtime failure fact, or an item's forensics event, into its incident: the stages, the
 * plan and `tenantIds` (exactly the tenants with an item: a forensics event seen before the plan
 * adds its tenant, so the order of the two never matters). Returns `doc` itself when nothing
 * changes (a forensics event of a known tenant), so the projector writes nothing. Idempotent by
 * stream sequence. Pure.
 */
export function evolveIncidentDoc(
  doc: IncidentDoc | undefined,
  f: Fact<IncidentEvent>,
  ownerTenantId: string | undefined,
): IncidentDoc {
  const e = f.event;
  const runtimeInstanceId = isForensics(e) ? e.data.failedRuntimeInstanceId : f.aggregateId;
  const s: IncidentDoc = doc ?? {
    _id: e.data.incidentId,
    incidentId: e.data.incidentId,
    runtimeInstanceId,
    status: "suspected",
    tenantIds: [],
    fenceFailures: [],
    firstSeq: f.seq,
    lastSeq: 0,
  };
  if (f.seq <= s.lastSeq) return s;
  if (isForensics(e) && doc !== undefined && doc.tenantIds.includes(e.tenantId)) return doc;
  const owned =
    s.ownerTenantId === undefined && ownerTenantId !== undefined && !isForensics(e) ? { ownerTenantId } : {};
  return { ...apply(s, e, f), ...owned, lastSeq: f.seq };
}

function apply(s: IncidentDoc, e: IncidentEvent, f: Fact<IncidentEvent>): IncidentDoc {
  const at = positionOf(f);
  switch (e.type) {
    case "runtime.suspected":
      return {
        ...s,
        status: advance(s.status, "suspected"),
        suspected: s.suspected ?? {
          ...at,
          reasonCode: e.data.reason.code,
          reasonDetail: e.data.reason.detail,
          ...(e.data.hostIncarnation ? { hostIncarnation: e.data.hostIncarnation } : {}),
        },
      };
    case "runtime.fenced":
      return {
        ...s,
        status: advance(s.status, "fenced"),
        fenced: s.fenced ?? { ...at, hostIncarnation: e.data.hostIncarnation, proof: { ...e.data.proof } },
      };
    case "runtime.fence-failed":
      return {
        ...s,
        status: advance(s.status, "fence-failed"),
        fenceFailures: [
          ...s.fenceFailures,
          { ...at, reasonCode: e.data.reason.code, reasonDetail: e.data.reason.detail, attempt: e.data.attempt },
        ],
      };
    case "runtime.recovery-planned":
      return {
        ...s,
        status: advance(s.status, "recovery-planned"),
        planned: s.planned ?? { ...at, itemCount: e.data.items.length },
        tenantIds: [...new Set([...s.tenantIds, ...e.data.items.map((i) => i.tenantId as string)])].sort(),
      };
    default:
      return { ...s, tenantIds: [...addOnce(s.tenantIds, e.tenantId as string)].sort() };
  }
}

/** The `incident_items` key. */
export const incidentItemId = (incidentId: string, forensicsId: string): string => `${incidentId}:${forensicsId}`;

/** The forensics ids of the items an incident event touches: every item of a plan, or the one item of a forensics event. */
export function itemIdsOf(e: IncidentEvent): string[] {
  if (e.type === "runtime.recovery-planned") return e.data.items.map((i) => i.forensicsId);
  return isForensics(e) ? [e.data.forensicsId] : [];
}

/**
 * Folds a plan or a forensics event into one item (`forensicsId`): the plan lists it
 * (`plannedSeq`), each forensics event advances it (`lastType`, and `outcome` when recovery
 * completes). Either may come first. Idempotent by stream sequence. Pure.
 */
export function evolveIncidentItem(
  doc: IncidentItem | undefined,
  f: Fact<IncidentEvent>,
  forensicsId: string,
): IncidentItem {
  const e = f.event;
  if (doc !== undefined && f.seq <= doc.lastSeq) return doc;
  if (e.type === "runtime.recovery-planned") {
    const p = e.data.items.find((i) => i.forensicsId === forensicsId);
    if (!p) throw new Error(`item ${forensicsId} is not in the plan at ${f.seq}`);
    const base = doc ?? {
      _id: incidentItemId(e.data.incidentId, forensicsId),
      incidentId: e.data.incidentId,
      forensicsId,
      tenantId: p.tenantId,
      sharedRunId: p.sharedRunId,
      localRunId: p.localRunId,
      ...(p.executionId ? { executionId: p.executionId } : {}),
      class: p.class,
      lastSeq: 0,
    };
    return { ...base, plannedSeq: base.plannedSeq ?? f.seq, lastSeq: f.seq };
  }
  if (!isForensics(e)) throw new Error(`${e.type} touches no incident item`);
  const x = e.data;
  const base = doc ?? {
    _id: incidentItemId(x.incidentId, forensicsId),
    incidentId: x.incidentId,
    forensicsId,
    tenantId: e.tenantId,
    sharedRunId: x.sharedRunId,
    localRunId: x.failedLocalRunId,
    ...(x.executionId ? { executionId: x.executionId } : {}),
    class: x.class,
    lastSeq: 0,
  };
  return {
    ...base,
    lastType: e.type,
    ...(e.type === "forensics.execution-recovery-completed" ? { outcome: e.data.outcome } : {}),
    lastSeq: f.seq,
  };
}
