import { DroverError } from "../contracts/index.ts";
import type { StoreContext } from "./store-context.ts";
import { toStoredEvent } from "./stored.ts";
import { aggregateSubject, aggregateWildcard, type AggregateRef } from "./subjects.ts";

/** The typed conflict of an append whose expectation is stale; details carry the OCC scope and sequences. */
export function versionConflict(
  ctx: StoreContext,
  ref: AggregateRef,
  expectedSeq: number,
  cause?: unknown,
  extra: Record<string, unknown> = {},
): DroverError {
  const subject = aggregateWildcard(ctx.layout, ref);
  const actual = /wrong last sequence: (\d+)/.exec((cause as Error | undefined)?.message ?? "")?.[1];
  return new DroverError(
    "version-conflict",
    `${aggregateSubject(ctx.layout, ref)} moved past the expected sequence ${expectedSeq}${actual ? ` (last is ${actual})` : ""}: re-read and decide again`,
    { cause, details: { subject, expectedSeq, ...(actual ? { actualSeq: Number(actual) } : {}), ...extra } },
  );
}

/**
 * Did an earlier attempt of this very append land? Only one message can ever have been accepted
 * with expectation `expectedSeq` on the aggregate: the first one after it. If that is our event
 * (same eventId), the append is done. nats-server 2.15 checks the expected sequence *before*
 * the msg-id dedupe, so a retried publish whose first attempt was stored comes back as 10071, not
 * as a duplicate ack; this lookup is what makes the retry idempotent (and keeps it so after the
 * duplicate window).
 */
export async function landedEarlier(
  ctx: StoreContext,
  ref: AggregateRef,
  expectedSeq: number,
  eventId: string,
): Promise<number | undefined> {
  const m = await ctx.reader.first(aggregateWildcard(ctx.layout, ref), expectedSeq + 1);
  if (!m) return undefined;
  try {
    return toStoredEvent(m).event.eventId === eventId ? m.seq : undefined;
  } catch {
    return undefined; // an undecodable message is certainly not the valid event we sent
  }
}
