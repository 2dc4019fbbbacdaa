import type { DataOf, EventOf, EventType } from "../../../contracts/index.ts";

/** Who writes and why: every event the provisioner appends for one request shares its correlation. */
export interface Origin {
  readonly instanceId: string;
  /** The scale-out request id: ties the runtime's events to the request that created it. */
  readonly correlationId: string;
  /** The `requested` event's id. */
  readonly causationId: string;
  /** Required on scale-out events; on runtime events only for an owned (dedicated/hybrid) runtime. */
  readonly tenantId?: string;
}

/** Injected per event: the writer's clock and a fresh event id. */
export interface Stamp {
  readonly now: Date;
  readonly eventId: string;
}

/**
 * Wraps event data in drover's envelope as the provisioner writes it. Pure; the event store
 * validates the result against the catalogue before a byte is sent (contract-violation otherwise).
 */
export function envelope<T extends EventType>(type: T, data: DataOf<T>, origin: Origin, stamp: Stamp): EventOf<T> {
  return {
    eventId: stamp.eventId,
    type,
    schemaVersion: 1,
    occurredAt: stamp.now.toISOString(),
    ...(origin.tenantId ? { tenantId: origin.tenantId } : {}),
    correlationId: origin.correlationId,
    causationId: origin.causationId,
    writer: { service: "provisioner", instanceId: origin.instanceId },
    data,
  } as unknown as EventOf<T>;
}
