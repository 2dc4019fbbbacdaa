import type { Writer } from "./envelope.ts";
import type { DataOf, EventOf, EventType } from "./events.ts";
import type { TenantId } from "./ids.ts";

/** What the events of one run, execution or request share: who writes them, and why. */
export interface EventOrigin {
  readonly writer: Writer;
  /** The run/request the event belongs to. */
  readonly correlationId: string;
  /** The event or command that caused it. */
  readonly causationId: string;
  /** Required by the schema on tenant-scoped aggregates; absent on a shared runtime's events. */
  readonly tenantId?: TenantId | undefined;
}

/** Per event, minted by the shell (domain code makes neither): a fresh event id and the writer's clock reading. */
export interface EventStamp {
  readonly eventId: string;
  readonly now: Date;
}

/**
 * Builds the envelope (identities-and-events.md) around `data`, whose type the compiler checks
 * against the catalogue entry of `type`. The event store validates the whole event before a byte
 * is sent, so what the types cannot say (an id's pattern, a required tenant) fails there with
 * `contract-violation`, never on the wire.
 */
export function buildEvent<T extends EventType>(
  type: T,
  data: DataOf<T>,
  origin: EventOrigin,
  stamp: EventStamp,
): EventOf<T> {
  const event = {
    eventId: stamp.eventId,
    type,
    schemaVersion: 1,
    occurredAt: stamp.now.toISOString(),
    ...(origin.tenantId === undefined ? {} : { tenantId: origin.tenantId }),
    correlationId: origin.correlationId,
    causationId: origin.causationId,
    writer: origin.writer,
    data,
  };
  // TypeScript cannot relate a generic `T` to the member of the `DroverEvent` union it selects, and
  // the eventId's brand is proven by the store's validation, not here: the one cast of the builder.
  return event as unknown as EventOf<T>;
}

/** An event's type and data before its envelope, as deciders return them: `data` matches `type`. */
export type EventDraft<T extends EventType = EventType> = {
  [K in T]: { readonly type: K; readonly data: DataOf<K> };
}[T];
