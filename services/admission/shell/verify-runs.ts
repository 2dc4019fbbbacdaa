import { runRef, type EventStore } from "../../../streams/index.ts";
import type { RunIndex } from "./run-index.ts";
import { isTerminal } from "../../../aggregates/run.ts";

/**
 * Settles the runs the index first saw after it dropped terminal runs (RunIndex.maxTerminalRuns):
 * each one's history is read from the log. When its first event there is the one the index first
 * saw, it is new and is simply marked verified; otherwise it is a dropped run coming back (a late
 * or duplicate event) and the index takes the fold of its whole history, so a finished run is seen
 * finished and never admitted again. Runs in doubt are never pending, so no decision waits on a guess.
 * A read that ends before the last event the index holds of the run (an R3 replica behind: a leader
 * election) is no history of it: the run stays unverified for the next pass. Taken as its history,
 * a new run was reset to nothing and never placed (no later event of it comes while it waits).
 */
export async function verifyRuns(index: RunIndex, store: Pick<EventStore, "read">): Promise<number> {
  let settled = 0;
  for (const r of index.unverified()) {
    if (isTerminal(r.state.status)) continue; // settled by the index itself when it ended
    const seen = r.state.lastSeq;
    const h = await store.read(runRef(r.tenantId, r.sharedRunId), { skipUndecodable: true, atLeastSeq: seen });
    if (h.lastSeq < seen) continue;
    const first = Math.min(h.events[0]?.seq ?? Infinity, h.undecodable?.[0]?.seq ?? Infinity);
    if (first === r.firstSeq) index.markVerified(r);
    else index.resetRun(r.tenantId, r.sharedRunId, h.events);
    settled++;
  }
  return settled;
}
