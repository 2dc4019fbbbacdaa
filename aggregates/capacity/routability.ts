import { currentBeat, visibleEndpoint, type CapacityDescriptor } from "./descriptor.ts";

export interface RoutabilityContext {
  /** Injected clock (ms since epoch). */
  readonly now: number;
  /** A heartbeat older than this is stale (default 3 × heartbeat interval). */
  readonly staleMs: number;
  /** Slots currently reserved by admission for this runtime (Redis); subtracted from the beat's slots. */
  readonly reservedSlots: number;
}

export interface Routability {
  readonly canAcceptRun: boolean;
  /** Why not, as stable kebab-case reasons (empty when it can accept). */
  readonly reasons: readonly string[];
  readonly effectiveAvailableSlots: number;
  readonly availableWorkers: number;
}

/**
 * Derived, never stored (admission-and-capacity.md): ready ∧ endpoint ∧ every required layer ∧
 * fresh heartbeat ∧ not paused/draining ∧ effective slots > 0 ∧ workers present. No endpoint means
 * no capacity for both transports; the runtime stays visible with the reasons why.
 *
 * Slots count the local queue: a runtime reports `availableSlots = maxConcurrentRuns +
 * localQueueCapacity − running − queued`. The worker condition is "the runtime has workers", not
 * "a worker is idle now": dispatching onto a runtime's local queue behind a busy worker is
 * intended (it is exactly the local-queued inventory the recovery proof needs), and an idle-worker
 * rule would make that inventory depend on heartbeat timing.
 */
export function routability(d: CapacityDescriptor, ctx: RoutabilityContext): Routability {
  const reasons: string[] = [];
  const reg = d.registration;
  if (!reg) reasons.push("not-registered");
  if (d.status !== "ready") reasons.push(`status-${d.status}`);
  if (!visibleEndpoint(d)) reasons.push(reg?.transport === "grpc" ? "grpc-endpoint-missing" : "http-endpoint-missing");
  const missing = (reg?.requiredLayers ?? []).filter((l) => !d.layers.includes(l));
  if (missing.length > 0) reasons.push(`readiness-missing-${missing.join("-")}`);
  const hb = currentBeat(d);
  if (!hb) reasons.push("heartbeat-missing");
  else if (ctx.now - Date.parse(hb.at) > ctx.staleMs) reasons.push("heartbeat-stale");
  if (hb?.paused) reasons.push("paused");
  if (hb?.draining) reasons.push("draining");
  const slots = Math.max(0, (hb?.availableSlots ?? 0) - ctx.reservedSlots);
  const workers = hb?.availableWorkers ?? 0;
  if (slots <= 0) reasons.push("no-available-slots");
  if (hb && hb.workers <= 0) reasons.push("no-workers");
  return { canAcceptRun: reasons.length === 0, reasons, effectiveAvailableSlots: slots, availableWorkers: workers };
}
