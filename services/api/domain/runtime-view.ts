import { currentBeat, visibleEndpoint, type CapacityDescriptor } from "../../../aggregates/capacity/descriptor.ts";
import { routability } from "../../../aggregates/capacity/routability.ts";
import type { Heartbeat, RuntimeWorker } from "../../../contracts/index.ts";
import { drainStates } from "../../../aggregates/capacity/worker-version.ts";

/** One runtime as `GET /v1/runtimes` shows it: the capacity descriptor, flattened for humans. */
export interface RuntimeRow {
  readonly runtimeInstanceId: string;
  readonly tenantId: string | null;
  readonly tenantGroupId: string | null;
  readonly isolationMode: string | null;
  readonly allowSharedFallback: boolean | null;
  readonly transport: string | null;
  readonly hostProvider: string | null;
  readonly status: CapacityDescriptor["status"];
  readonly hostIncarnation: string | null;
  readonly requiredLayers: readonly string[];
  readonly layersPassed: readonly string[];
  readonly endpoint: string | null;
  readonly incidentId: string | null;
  readonly heartbeat: Heartbeat | null;
  readonly conflicts: readonly string[];
  readonly lastSeq: number;
  /**
   * The tenant worker it runs (docs/worker-versions.md), whether it drains (an old version, or started
   * for pinned runs: it takes no new run) and how many runs pinned to its version it holds (its
   * heartbeat's running + queued); null without a worker.
   */
  readonly worker: (RuntimeWorker & { readonly draining: boolean; readonly pinnedRuns: number }) | null;
}

/** Flattens a descriptor (the shared capacity fold's output); the endpoint is hidden once fenced, as the fold says. */
export function runtimeRow(
  d: CapacityDescriptor,
  all: readonly CapacityDescriptor[] = [d],
  deployed?: string,
): RuntimeRow {
  const reg = d.registration;
  const beat = currentBeat(d);
  return {
    runtimeInstanceId: d.runtimeInstanceId,
    tenantId: reg?.tenantId ?? null,
    tenantGroupId: reg?.tenantGroupId ?? null,
    isolationMode: reg?.isolationMode ?? null,
    allowSharedFallback: reg?.allowSharedFallback ?? null,
    transport: reg?.transport ?? null,
    hostProvider: reg?.hostProvider ?? null,
    status: d.status,
    hostIncarnation: d.host?.hostIncarnation ?? null,
    requiredLayers: reg?.requiredLayers ?? [],
    layersPassed: d.layers,
    endpoint: visibleEndpoint(d)?.endpoint ?? null,
    incidentId: d.incidentId ?? null,
    heartbeat: beat ?? null,
    conflicts: d.conflicts,
    lastSeq: d.lastSeq,
    worker: reg?.worker ? workerRow(d, all, reg.worker, beat ? beat.runningRuns + beat.queuedRuns : 0, deployed) : null,
  };
}

/** `deployed`: the version of the runtime's tenant's last `worker.deployed`, which is current when recorded. */
function workerRow(
  d: CapacityDescriptor,
  all: readonly CapacityDescriptor[],
  w: RuntimeWorker,
  runs: number,
  deployed: string | undefined,
) {
  const runtimes = all.map((x) => ({
    runtimeInstanceId: x.runtimeInstanceId,
    status: x.status,
    ...(x.registration?.tenantId ? { tenantId: x.registration.tenantId } : {}),
    ...(x.registration?.worker ? { worker: x.registration.worker } : {}),
  }));
  const state = drainStates(
    runtimes,
    d.registration?.tenantId ?? "",
    (id) => (id === d.runtimeInstanceId ? runs : 0),
    deployed,
  );
  const mine = state.find((x) => x.runtimeInstanceId === d.runtimeInstanceId);
  return { ...w, draining: mine?.draining ?? true, pinnedRuns: runs };
}

/** One runtime's schedulability (`GET /v1/capacity`), with every reason it cannot take a run. */
export interface CapacityEntry {
  readonly runtimeInstanceId: string;
  readonly tenantId: string | null;
  readonly isolationMode: string | null;
  readonly transport: string | null;
  readonly status: CapacityDescriptor["status"];
  readonly canAcceptRun: boolean;
  readonly reasons: readonly string[];
  readonly availableSlots: number;
  readonly availableWorkers: number;
}

/**
 * The shared routability rule (aggregates/capacity) applied with the given reservations. The
 * API's replay source knows no reservations (they live in Redis) and passes 0, so its answer can
 * only be more optimistic than admission's, which is why it is shown and never decided on.
 */
export function capacityEntry(
  d: CapacityDescriptor,
  ctx: { readonly now: Date; readonly staleMs: number; readonly reservedSlots: number },
): CapacityEntry {
  const r = routability(d, { now: ctx.now.getTime(), staleMs: ctx.staleMs, reservedSlots: ctx.reservedSlots });
  const reg = d.registration;
  return {
    runtimeInstanceId: d.runtimeInstanceId,
    tenantId: reg?.tenantId ?? null,
    isolationMode: reg?.isolationMode ?? null,
    transport: reg?.transport ?? null,
    status: d.status,
    canAcceptRun: r.canAcceptRun,
    reasons: r.reasons,
    availableSlots: r.effectiveAvailableSlots,
    availableWorkers: r.availableWorkers,
  };
}
