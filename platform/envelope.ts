import { randomBytes } from "node:crypto";
import type { DroverEvent, EventType, Writer } from "../contracts/index.ts";

/** Time and ids, injected so shells are testable and deciders stay pure. */
export interface Clock {
  now(): Date;
}
export interface Ids {
  next(prefix: string): string;
}
export const systemClock: Clock = { now: () => new Date() };
export const randomIds: Ids = { next: (prefix) => `${prefix}-${randomBytes(8).toString("hex")}` };

export interface EnvelopeContext {
  readonly writer: Writer;
  readonly clock: Clock;
  readonly ids: Ids;
}

/**
 * Wraps event data in the envelope (identities-and-events.md): a fresh eventId, the writer's clock
 * for humans, the writer, correlation and causation. The event is validated when it is appended.
 */
export function envelope<T extends EventType>(
  ctx: EnvelopeContext,
  type: T,
  data: unknown,
  opts: { tenantId?: string; correlationId: string; causationId: string },
): DroverEvent {
  return {
    eventId: ctx.ids.next("ev"),
    type,
    schemaVersion: 1,
    occurredAt: ctx.clock.now().toISOString(),
    ...(opts.tenantId ? { tenantId: opts.tenantId } : {}),
    correlationId: opts.correlationId,
    causationId: opts.causationId,
    writer: ctx.writer,
    data,
  } as unknown as DroverEvent;
}
