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
 * Nothing here is stored. With `beatAts` (the beat time of each runtime at the last read, kept by the
 * caller and updated here), the view and the reservation counts are one Redis round trip
 * (`Reservations.liveWithCounts`); only runtimes that beat since then are counted again, in a second.
 */
export async function readCandidates(
  view: CapacityViewStore<CapacityDescriptor>,
  reservations: Reservations,
  now: number,
  staleMs: number,
  beatAts?: Map<string, number>,
): Promise<Placeable[]> {
  const out: Placeable[] = [];
  const { registered, reservedOf } = await readCounted(view, reservations, now, beatAts);
  for (const d of registered) {
    const reg = d.registration!;
    const reservedSlots = reservedOf.get(d.runtimeInstanceId) ?? 0;
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

/** Reservations matter only on a runtime that may still take work. */
const mayTakeWork = (d: CapacityDescriptor) => rankOf(d.status) < rankOf("fenced");

/**
 * The registered live descriptors and the reservations held on each that may still take work (not
 * counting those its current beat shows). Retired runtimes are not read at all: they never take work
 * again (platform/capacity-view.ts `live`).
 */
async function readCounted(
  view: CapacityViewStore<CapacityDescriptor>,
  reservations: Reservations,
  now: number,
  beatAts: Map<string, number> | undefined,
): Promise<{ registered: CapacityDescriptor[]; reservedOf: Map<string, number> }> {
  const reservedOf = new Map<string, number>();
  if (!beatAts || !reservations.liveWithCounts) {
    const registered = (await view.live()).filter((d) => d.registration !== undefined);
    const live = registered.filter(mayTakeWork);
    // A reservation whose run the latest heartbeat already shows is not subtracted twice.
    const counts = await reservations.countMany(
      live.map((d) => d.runtimeInstanceId),
      now,
      live.map((d) => takenAtOf(currentBeat(d))),
    );
    live.forEach((d, i) => reservedOf.set(d.runtimeInstanceId, counts[i]!));
    return { registered, reservedOf };
  }
  const rows = (await reservations.liveWithCounts(now, beatAts)).map((r) => ({
    ...r,
    d: JSON.parse(r.json) as CapacityDescriptor,
  }));
  const counted = rows.filter((r) => r.d.registration !== undefined && mayTakeWork(r.d));
  // Counted for another beat than the descriptor's current one (it beat since the last read, or it is
  // new): counted again for its own, so the count is always the one its current beat leaves.
  const recount = counted.filter((r) => r.countedFor !== takenAtOf(currentBeat(r.d)));
  const again = await (recount.length === 0
    ? []
    : reservations.countMany(
        recount.map((r) => r.d.runtimeInstanceId),
        now,
        recount.map((r) => takenAtOf(currentBeat(r.d))),
      ));
  for (const r of counted) reservedOf.set(r.d.runtimeInstanceId, r.reserved);
  recount.forEach((r, i) => reservedOf.set(r.d.runtimeInstanceId, again[i]!));
  beatAts.clear();
  for (const r of counted) beatAts.set(r.d.runtimeInstanceId, takenAtOf(currentBeat(r.d)));
  return { registered: rows.map((r) => r.d).filter((d) => d.registration !== undefined), reservedOf };
}
