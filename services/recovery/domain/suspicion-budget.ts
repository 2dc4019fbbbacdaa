import type { RuntimeRecord, SuspicionCode } from "./runtime-health.ts";

/** A runtime health would suspect now, and why (see `suspicion`). */
export interface Candidate {
  readonly runtimeInstanceId: string;
  readonly code: SuspicionCode;
  readonly detail: string;
}

/** A candidate left live this pass, and why: the decision is re-taken every pass. */
export interface Held extends Candidate {
  readonly reason: "fence-storm-cap";
  readonly holdDetail: string;
}

/** A signal that does not prove a death by itself (the host did not see one): budgeted by the fence-storm cap. */
const unproven = (code: SuspicionCode | undefined): boolean => code === "heartbeat-stale" || code === "connection-lost";

/**
 * No fencing storms (issue 14): heartbeat silence or a lost connection (signals, not a host's proof)
 * may put at most `max(1, floor(share × live))` runtimes under suspicion at once — suspected, not yet recovered. When a NATS outage, a clock jump
 * or a stalled follower makes the whole fleet look silent, that many are suspected (and fenced) and
 * the rest wait, each pass re-checking its heartbeats; if they beat again, nothing happens to them.
 * A death the host proves (process exited, Pod deleted) is never held: it costs no healthy runtime.
 * Pure: the fleet and the open suspicions come from the folded runtime records.
 */
export function budgetSuspicions(
  runtimes: readonly RuntimeRecord[],
  candidates: readonly Candidate[],
  share: number,
): { readonly suspect: readonly Candidate[]; readonly held: readonly Held[] } {
  const live = runtimes.filter((r) => r.published && r.host && !r.retired && !r.planned);
  const openStale = live.filter((r) => unproven(r.suspected?.reason.code as SuspicionCode | undefined)).length;
  const cap = Math.max(1, Math.floor(share * live.length));
  let budget = cap - openStale;
  const suspect: Candidate[] = [];
  const held: Held[] = [];
  for (const c of candidates) {
    if (!unproven(c.code)) suspect.push(c);
    else if (budget > 0) {
      budget -= 1;
      suspect.push(c);
    } else
      held.push({
        ...c,
        reason: "fence-storm-cap",
        holdDetail: `${openStale + suspect.filter((s) => unproven(s.code)).length} of ${live.length} live runtimes already suspected on heartbeat silence or lost connections (cap ${cap}, share ${share})`,
      });
  }
  return { suspect, held };
}
