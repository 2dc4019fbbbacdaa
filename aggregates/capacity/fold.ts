import { assertNever } from "../../contracts/assert-never.ts";
import type { DroverEvent, RuntimeInstanceId, StoredHeartbeat } from "../../contracts/index.ts";
import { emptyDescriptor, rankOf, type CapacityDescriptor, type Lifecycle } from "./descriptor.ts";

type RuntimeEvent = Extract<DroverEvent, { type: `runtime.${string}` }>;

/** An input of the capacity fold: a runtime event at its stream sequence, or a heartbeat. */
export type CapacityInput =
  | {
      readonly kind: "event";
      readonly seq: number;
      readonly runtimeInstanceId: RuntimeInstanceId;
      readonly event: RuntimeEvent;
    }
  | { readonly kind: "heartbeat"; readonly beat: StoredHeartbeat };
export type { RuntimeEvent };

const forward = (d: CapacityDescriptor, to: Lifecycle): Lifecycle => (rankOf(to) > rankOf(d.status) ? to : d.status);
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/**
 * Folds one input into a descriptor. Pure and total: an event already folded (seq ≤ lastSeq) is a
 * no-op, so redelivery is harmless; a heartbeat only replaces one of the same incarnation with a
 * lower beat. No input ever removes the endpoint or a readiness layer: only `fenced`/`retired`
 * hide the endpoint (by status), so routability never regresses before fencing.
 */
export function evolveCapacity(d: CapacityDescriptor | undefined, input: CapacityInput): CapacityDescriptor {
  if (input.kind === "heartbeat") {
    const hb = input.beat;
    const base = d ?? emptyDescriptor(hb.runtimeInstanceId);
    const prev = base.beats[hb.hostIncarnation];
    if (prev && prev.beat >= hb.beat) return base;
    return { ...base, beats: { ...base.beats, [hb.hostIncarnation]: hb } };
  }
  const { seq, event } = input;
  const base = d ?? emptyDescriptor(input.runtimeInstanceId);
  if (seq <= base.lastSeq) return base;
  const next = applyEvent(base, event);
  return { ...next, lastSeq: seq };
}

function applyEvent(d: CapacityDescriptor, e: RuntimeEvent): CapacityDescriptor {
  switch (e.type) {
    case "runtime.registered":
      if (!d.registration) return { ...d, registration: e.data };
      return same(d.registration, e.data)
        ? d
        : { ...d, conflicts: [...d.conflicts, `conflicting registration ${e.eventId} ignored`] };
    case "runtime.host-started":
      if (!d.host) return { ...d, host: e.data };
      if (d.host.hostIncarnation === e.data.hostIncarnation) return d;
      return {
        ...d,
        conflicts: [
          ...d.conflicts,
          `second incarnation ${e.data.hostIncarnation} ignored (a runtime id is never reused)`,
        ],
      };
    case "runtime.readiness-layer-passed":
      if (rankOf(d.status) >= rankOf("fenced") || d.layers.includes(e.data.layer)) return d;
      if (d.host && d.host.hostIncarnation !== e.data.hostIncarnation)
        return { ...d, conflicts: [...d.conflicts, `layer ${e.data.layer} for another incarnation ignored`] };
      return { ...d, layers: [...d.layers, e.data.layer].sort() };
    case "runtime.endpoint-published":
      return d.endpoint ? d : { ...d, endpoint: e.data };
    case "runtime.capacity-published":
      return { ...d, capacityPublished: true, status: forward(d, "ready") };
    case "runtime.draining":
      return { ...d, status: forward(d, "draining") };
    case "runtime.suspected":
      return { ...d, status: forward(d, "suspected"), incidentId: d.incidentId ?? e.data.incidentId };
    case "runtime.fenced":
      return { ...d, status: forward(d, "fenced"), incidentId: d.incidentId ?? e.data.incidentId };
    case "runtime.retired":
      return { ...d, status: forward(d, "retired") };
    case "runtime.host-start-requested":
    case "runtime.host-start-failed":
    case "runtime.recovery-planned":
    case "runtime.host-exited":
    case "runtime.fence-failed":
    case "runtime.pool-member-registered":
    case "runtime.pool-member-ready":
    case "runtime.pool-member-claimed":
      return d;
    default:
      return assertNever(e, "runtime event");
  }
}
