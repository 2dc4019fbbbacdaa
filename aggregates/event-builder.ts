import type { DataOf, EventOf, EventType, Writer } from "../contracts/index.ts";

/** Per-event metadata the shell injects: the clock reading and a fresh event id (domain code makes neither). */
export interface EventMeta {
  readonly eventId: string;
  readonly now: string;
}

/** What every event of one execution or run shares: tenant, correlation, causation and writer. */
export interface EventContext {
  readonly tenantId: string;
  readonly correlationId: string;
  readonly causationId: string;
  readonly writer: Writer;
}

/**
 * Builds a full event envelope of type `type`. The result is validated by the event store's schema
 * before anything is sent, so a wrong shape fails there with `contract-violation`, never on the wire.
 */
export function buildEvent<T extends EventType>(
  type: T,
  data: DataOf<T>,
  ctx: EventContext,
  meta: EventMeta,
): EventOf<T> {
  return {
    eventId: meta.eventId,
    type,
    schemaVersion: 1,
    occurredAt: meta.now,
    tenantId: ctx.tenantId,
    correlationId: ctx.correlationId,
    causationId: ctx.causationId,
    writer: ctx.writer,
    data,
  } as unknown as EventOf<T>;
}
