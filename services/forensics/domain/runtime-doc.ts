import { isPlannedStopId, type DroverEvent } from "../../../contracts/index.ts";
import type { RuntimeDoc } from "../../../contracts/read-models.ts";
import { addOnce } from "./fact.ts";
import type { Fact } from "./fact.ts";

type RuntimeEvent = Extract<DroverEvent, { type: `runtime.${string}` }>;

/**
 * Folds a runtime event into what the projector needs to route the runtime's later events: its
 * owner tenant (from `registered`, or the envelope when the writer set one), its latest status and
 * host incarnation, and its incidents. Idempotent by stream sequence. Pure.
 */
export function evolveRuntimeDoc(doc: RuntimeDoc | undefined, f: Fact<RuntimeEvent>): RuntimeDoc {
  const e = f.event;
  const s: RuntimeDoc = doc ?? { _id: f.aggregateId, status: "unknown", incidentIds: [], lastSeq: 0 };
  if (f.seq <= s.lastSeq) return s;
  const owner = s.ownerTenantId ?? (e.type === "runtime.registered" ? e.data.tenantId : undefined) ?? e.tenantId;
  const host =
    "hostIncarnation" in e.data && typeof e.data.hostIncarnation === "string"
      ? e.data.hostIncarnation
      : s.hostIncarnation;
  const named = "incidentId" in e.data ? e.data.incidentId : undefined;
  const incident = named !== undefined && !isPlannedStopId(named) ? named : undefined; // a planned stop is no incident
  return {
    ...s,
    status: e.type.slice("runtime.".length),
    lastSeq: f.seq,
    ...(owner !== undefined ? { ownerTenantId: owner } : {}),
    ...(host !== undefined ? { hostIncarnation: host } : {}),
    incidentIds: incident === undefined ? s.incidentIds : addOnce(s.incidentIds, incident as string),
  };
}
