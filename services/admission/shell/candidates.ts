import type { HostIncarnation } from "../../../contracts/index.ts";
import type { CapacityDescriptor } from "../../../aggregates/capacity/descriptor.ts";
import { currentBeat, rankOf, visibleEndpoint } from "../../../aggregates/capacity/descriptor.ts";
import { routability } from "../../../aggregates/capacity/routability.ts";
import type { CapacityViewStore } from "../../../platform/capacity-view.ts";
import type { Reservations } from "../../../platform/reservations.ts";
import type { Candidate } from "../domain/ranking.ts";

/** A candidate plus what dispatch needs to reach it. */
export interface Placeable extends Candidate {
  readonly endpoint?: string;
  readonly transport: "http" | "grpc";
  readonly hostIncarnation?: HostIncarnation;
  /** The runtime's own free slots per its heartbeat: the reservation limit. */
  readonly heartbeatSlots: number;
  /** When that beat was taken, on the runtime's clock (-1: unknown): runs it accepted by then are in it. */
  readonly beatTakenAt: number;
}

/**
 * When the beat's counts are from, on the clock the runtime times its command answers with (a
 * reservation's acceptedAt, dispatch.ts): runs accepted by then are in the beat. Not the stored time:
 * a beat taken before the runtime accepted a run can be stored after the answer was built, and a
 * reservation counted as "in the beat" by the stored time over-committed the runtime (seen in the
 * service-restarts e2e: a place given twice while the beat's publish waited on the runtime's loop).
 */
const takenAtOf = (hb: { readonly takenAt?: string } | undefined): number => {
  const t = hb?.takenAt === undefined ? NaN : Date.parse(hb.takenAt);
  return Number.isFinite(t) ? t : -1;
};

/**
 * The capacity view as admission sees it right now: every runtime of the control plane that is not
 * retired, with its routability derived at `now` (reservations subtracted; a fenced runtime's are not read).
 * Nothing here is stored.
 */
export async function readCandidates(
  view: CapacityViewStore<CapacityDescriptor>,
  reservations: Reservations,
  now: number,
  staleMs: number,
): Promise<Placeable[]> {
  const out: Placeable[] = [];
  // Retired runtimes are not read at all: they never take work again (platform/capacity-view.ts `live`).
  const registered = (await view.live()).filter((d) => d.registration !== undefined);
  // Reservations matter only on a runtime that may still take work: one pipelined read for those.
  const liveDescriptors = registered.filter((d) => rankOf(d.status) < rankOf("fenced"));
  const live = liveDescriptors.map((d) => d.runtimeInstanceId);
  const at = new Map(live.map((id, i) => [id, i]));
  // A reservation whose run the latest heartbeat already shows is not subtracted twice.
  const beatAts = liveDescriptors.map((d) => takenAtOf(currentBeat(d)));
  const reserved = await reservations.countMany(live, now, beatAts);
  for (const d of registered) {
    const reg = d.registration!;
    const i = at.get(d.runtimeInstanceId);
    const reservedSlots = i === undefined ? 0 : reserved[i]!;
    const r = routability(d, { now, staleMs, reservedSlots });
    const hb = currentBeat(d);
    const endpoint = visibleEndpoint(d)?.endpoint;
    out.push({
      runtimeInstanceId: d.runtimeInstanceId,
      isolationMode: reg.isolationMode,
      tenantId: reg.tenantId,
      tenantGroupId: reg.tenantGroupId,
      canAcceptRun: r.canAcceptRun,
      reasons: r.reasons,
      effectiveAvailableSlots: r.effectiveAvailableSlots,
      availableWorkers: r.availableWorkers,
      runningRuns: hb?.runningRuns ?? 0,
      queuedRuns: hb?.queuedRuns ?? 0,
      lastHeartbeatAt: hb ? Date.parse(hb.at) : 0,
      status: d.status,
      transport: reg.transport,
      ...(reg.stepKinds ? { stepKinds: reg.stepKinds } : {}),
      ...(reg.worker ? { worker: reg.worker } : {}),
      heartbeatSlots: hb?.availableSlots ?? 0,
      beatTakenAt: takenAtOf(hb),
      ...(endpoint ? { endpoint } : {}),
      ...(d.host ? { hostIncarnation: d.host.hostIncarnation } : {}),
    });
  }
  return out;
}
