import { isPlannedStopId, type DroverEvent } from "../../../contracts/index.ts";

/**
 * The crash-loop rule (runbook "crash loops end"): each `requeued-for-resume` of a run under a runtime
 * failure incident (not a planned stop) is one crash of its execution's runtime. The crash being
 * recovered now is one more; when that makes more than `limit`, the run is not resumed again.
 * Returns the count and incidents when the limit is passed, undefined otherwise. Pure.
 */
export function crashLoopOf(
  runHistory: readonly { readonly event: DroverEvent }[],
  currentIncidentId: string,
  limit: number,
): { crashes: number; limit: number; incidents: string[] } | undefined {
  if (isPlannedStopId(currentIncidentId)) return undefined;
  const incidents = runHistory.flatMap(({ event: e }) =>
    e.type === "run.requeued-for-resume" && !isPlannedStopId(e.data.incidentId) ? [e.data.incidentId as string] : [],
  );
  incidents.push(currentIncidentId);
  return incidents.length > limit ? { crashes: incidents.length, limit, incidents } : undefined;
}
