import type { DataOf, DroverEvent, EventType, TenantId } from "../../contracts/index.ts";
import { envelope, type EnvelopeContext } from "../../platform/envelope.ts";

/**
 * Builds an event from test data the compiler cannot check: ids written as plain strings, data
 * spread from a table, deliberately malformed producer submissions. The event store validates every
 * event on append, which is the boundary these tests exercise, so the data is passed through unchecked.
 */
export function looseEvent(
  ctx: EnvelopeContext,
  type: EventType,
  data: unknown,
  opts: { tenantId?: string | undefined; correlationId: string; causationId: string },
): DroverEvent {
  return envelope(ctx, type, data as DataOf<EventType>, { ...opts, tenantId: opts.tenantId as TenantId | undefined });
}
