import { isDroverError } from "../../../contracts/index.ts";
import { scaleOutRef } from "../../../streams/index.ts";
import { isTerminal } from "../domain/request-state.ts";
import { abandonAttempt } from "./abandon.ts";
import type { ProvisionerDeps } from "./context.ts";
import { originOf, outcome, readRequest } from "./request-writer.ts";
import type { RosterView } from "./roster-view.ts";

const MAX_CONFLICTS = 8;

/**
 * Closes a scale-out request whose last JetStream delivery failed, or whose delivery failed with
 * an error the consumer terminates (`why` "refused": no redelivery follows either; services/provisioner/
 * README.md "Deliveries exhausted"): without this the request stayed `requested` forever once the
 * consumer's `maxDeliver` ran out, admission and forensics disagreeing on it. Cleans up first, as a takeover
 * does: a start registered for the request that published capacity fulfils it; one that did not
 * is abandoned (`host-start-failed`, its exact incarnation killed, `retired`). Then appends
 * `scaleout.rejected` (`scale-out-deliveries-exhausted`, the last error as detail), conditional on
 * the request as read; a conflict re-reads, and a request that ended meanwhile is left as it is.
 * Returns what it did. Failure modes: store errors reject (the delivery is then given up as before:
 * the dead-letter stream records it, and admission treats the request as ended past `expiresAt`).
 * `deliveredSeq`: the delivered `requested` event's sequence; a read that ends before it (a replica
 * behind) rejects rather than finding nothing to close (request-writer.ts `readRequest`).
 */
export async function closeExhausted(
  d: ProvisionerDeps,
  roster: RosterView,
  tenantId: string,
  requestId: string,
  lastError: unknown,
  why: "exhausted" | "refused" = "exhausted",
  deliveredSeq?: number,
): Promise<"closed" | "fulfilled" | "ended-already"> {
  const ref = scaleOutRef(tenantId, requestId);
  let s = await readRequest(d.store, ref, deliveredSeq);
  if (s.status === "none" || isTerminal(s) || !s.request) return "ended-already";
  const origin = originOf(d, s);
  const attempts = [...(await roster.current()).runtimes.values()].filter(
    (r) => r.scaleOutRequestId === requestId && !r.pool && !r.endedBy,
  );
  const published = attempts.find((r) => r.capacityPublished);
  for (const r of published ? [published] : attempts) {
    if (!r.capacityPublished && (await abandonAttempt(d, r, s.request.providerHint, origin)) !== "published") continue;
    const e = outcome.fulfilled(d, s, r.runtimeInstanceId);
    return (await appendEnd(d, ref, s.lastSeq, e)) ? "fulfilled" : "ended-already";
  }
  const failed =
    why === "exhausted"
      ? "every delivery of the request failed"
      : "a delivery of the request failed with an error no redelivery can change (the consumer gives it up)";
  const detail = `${failed}; last error: ${String((lastError as Error)?.message ?? lastError)}`;
  s = await readRequest(d.store, ref, deliveredSeq);
  if (isTerminal(s)) return "ended-already";
  const e = outcome.rejected(d, s, { code: "scale-out-deliveries-exhausted", detail: detail.slice(0, 2000) });
  return (await appendEnd(d, ref, s.lastSeq, e)) ? "closed" : "ended-already";
}

/** Appends a terminal event conditionally; on a conflict re-reads and retries unless the request ended meanwhile. */
async function appendEnd(
  d: ProvisionerDeps,
  ref: ReturnType<typeof scaleOutRef>,
  expectedSeq: number,
  e: Parameters<ProvisionerDeps["store"]["append"]>[1],
): Promise<boolean> {
  let expected = expectedSeq;
  for (let conflicts = 0; ; conflicts++) {
    try {
      await d.store.append(ref, e, { expectedSeq: expected });
      return true;
    } catch (err) {
      if (!isDroverError(err, "version-conflict") || conflicts >= MAX_CONFLICTS) throw err;
      const now = await readRequest(d.store, ref);
      if (isTerminal(now)) return false;
      expected = now.lastSeq;
    }
  }
}
