import { headers } from "@nats-io/transport-node";
import { contractViolation, DroverError } from "../contracts/index.ts";
import { publishAtomicBatch, type BatchMessage } from "./atomic-batch.ts";
import { landedEarlier, versionConflict } from "./occ.ts";
import { defaultMsgId, nthMsgId } from "./msg-ids.ts";
import { JS, jsCode, toStoreError } from "./nats-errors.ts";
import { encodeFor, type StoreContext } from "./store-context.ts";
import { toStoredEvent } from "./stored.ts";
import { aggregateWildcard } from "./subjects.ts";
import type { Appended, BatchEntry } from "./types.ts";

// Refusals after which nothing is stored and the same batch may succeed later.
// 10164/10158: a clustered leader still applying a write on one of the aggregates (or with one of
// the msg ids): nothing of this batch is stored and the same batch may be sent again.
const TRANSIENT = new Set<number>([
  JS.batchIncomplete,
  JS.batchTooManyInflight,
  JS.wrongLastSequenceConstant,
  JS.msgIdInProcess,
]);

/**
 * One atomic multi-aggregate transition. The first event of each entry carries that aggregate's
 * expectation (`Nats-Expected-Last-Subject-Sequence` scoped by `...-Subject` to the aggregate
 * wildcard); the server evaluates all of them against the stream as it was before the batch, at
 * commit, under lock (ADR-50), and stores every event contiguously or none. Later events of an
 * entry carry no expectation: their aggregate was already checked, and an expectation on a
 * subject written earlier in the same batch is refused by the server (10164).
 *
 * Failure modes: a stale expectation → `version-conflict` (details.subject/expectedSeq name the first
 * stale entry, details.stale lists all of them);
 * any other refusal → `batch-rejected` (retryable when the server lost a message of the batch or
 * had too many in flight); no answer → `event-store-unavailable`, and a retry of the same entries
 * is idempotent (an already committed batch is recognised and returned with `duplicate: true`).
 */
export async function appendAtomic(ctx: StoreContext, entries: readonly BatchEntry[]): Promise<Appended[]> {
  if (entries.length === 0) throw contractViolation("atomic batch", "has no entries");
  const scopes = entries.map((e) => aggregateWildcard(ctx.layout, e.ref));
  if (new Set(scopes).size !== scopes.length)
    throw contractViolation("atomic batch", "names an aggregate twice; put all its events in one entry");
  const messages: BatchMessage[] = [];
  const eventIds: string[] = [];
  for (const [k, entry] of entries.entries()) {
    if (entry.events.length === 0) throw contractViolation("atomic batch", `entry for ${scopes[k]} has no events`);
    const base = defaultMsgId(ctx.layout, entry.ref, entry.expectedSeq);
    for (const [i, event] of entry.events.entries()) {
      const enc = encodeFor(ctx.layout, entry.ref, event);
      const h = headers();
      h.set("Nats-Msg-Id", nthMsgId(base, i));
      if (i === 0) {
        h.set("Nats-Expected-Last-Subject-Sequence", String(entry.expectedSeq));
        h.set("Nats-Expected-Last-Subject-Sequence-Subject", scopes[k]!);
        if (k === 0) h.set("Nats-Expected-Stream", ctx.layout.eventStream);
      }
      messages.push({ subject: enc.subject, data: enc.data, headers: h });
      eventIds.push(enc.eventId);
    }
  }
  try {
    const ack = await publishAtomicBatch(ctx.nc, messages, ctx.timeoutMs);
    const first = ack.seq - ack.count + 1;
    return messages.map((_, i) => ({ seq: first + i, duplicate: false }));
  } catch (e) {
    const code = jsCode(e);
    if (code === JS.wrongLastSequence || code === JS.batchDuplicateMsgId) {
      const earlier = await committedEarlier(ctx, entries, eventIds);
      if (earlier) return earlier;
      // A duplicate msg id that is not our batch means another decision was appended at one of our
      // expectations (msg ids are `<aggregate>:<expectedSeq>`): the server checks ids before
      // expectations inside a batch, so that conflict surfaces as 10201, not 10071.
      const stale = await staleEntries(ctx, entries);
      const head = stale[0];
      if (head) {
        const ref = entries[scopes.indexOf(head.subject)]!.ref;
        throw versionConflict(ctx, ref, head.expectedSeq, code === JS.wrongLastSequence ? e : undefined, {
          stale,
          jsCode: code,
          actualSeq: head.actualSeq,
        });
      }
    }
    if (code !== undefined) {
      throw new DroverError(
        "batch-rejected",
        `atomic batch of ${messages.length} events refused, nothing stored: ${(e as Error).message} (code ${code})`,
        { cause: e, retryable: TRANSIENT.has(code), details: { jsCode: code, aggregates: scopes } },
      );
    }
    throw toStoreError(e, `atomic batch of ${messages.length} events`, { aggregates: scopes });
  }
}

/** A retried batch that was committed before: its events sit contiguously after the first entry's expectation. */
async function committedEarlier(
  ctx: StoreContext,
  entries: readonly BatchEntry[],
  eventIds: readonly string[],
): Promise<Appended[] | undefined> {
  const head = entries[0]!;
  const first = await landedEarlier(ctx, head.ref, head.expectedSeq, eventIds[0]!);
  if (first === undefined) return undefined;
  const lastSeq = first + eventIds.length - 1;
  const last = await (await ctx.jsm).direct.getMessage(ctx.layout.eventStream, { seq: lastSeq }).catch(() => null);
  if (!last || toStoredEvent(last).event.eventId !== eventIds.at(-1)) return undefined;
  return eventIds.map((_, i) => ({ seq: first + i, duplicate: true }));
}

async function staleEntries(
  ctx: StoreContext,
  entries: readonly BatchEntry[],
): Promise<Array<{ subject: string; expectedSeq: number; actualSeq: number }>> {
  const jsm = await ctx.jsm;
  const out = [];
  for (const e of entries) {
    const subject = aggregateWildcard(ctx.layout, e.ref);
    const m = await jsm.streams.getMessage(ctx.layout.eventStream, { last_by_subj: subject }).catch(() => null);
    const actualSeq = m?.seq ?? 0;
    if (actualSeq !== e.expectedSeq) out.push({ subject, expectedSeq: e.expectedSeq, actualSeq });
  }
  return out;
}
