export {
  planScaleOut,
  SCALE_OUT_RETRY_MS,
  type KnownRequest,
  type ScaleOutPlan,
} from "../../../aggregates/scale-out-plan.ts";

/**
 * The liveness guard (pure): a run queued longer than `boundMs` with no visible capacity is stalled
 * when no scale-out request for it is open, or the open one is past its own expiry. Admission then
 * re-reads the key's requests from the log and re-plans, and says so on the run (`queue-stalled`),
 * so a stuck queue is found by the system, not by a user.
 */
export function isQueueStalled(
  queuedSinceMs: number | undefined,
  open: { readonly expiresMs?: number } | undefined,
  now: number,
  boundMs: number,
): boolean {
  if (queuedSinceMs === undefined || now - queuedSinceMs <= boundMs) return false;
  return !open || (open.expiresMs !== undefined && now > open.expiresMs);
}

/**
 * Whether the tenant's runtimes admission sees alive already fill its `maxRuntimeInstances`: those of
 * its prefix (`<prefix>-…`) not suspected, fenced or retired. The provisioner would reject a request
 * then (`scale-out-limit-reached`, counted by the same prefix), so admission does not make one: the
 * rejection was wasted work, and it held the key's next request back (planScaleOut's back-off) even
 * after a runtime was lost. A lost runtime (suspected or later) is not counted, so its loss allows a
 * request at once; a view behind the log counts a runtime that ended meanwhile only until the view
 * sees its suspicion (a host exit is suspected at once), and one that misses a new runtime asks as
 * before (the provisioner still decides). Pure.
 */
export function atRuntimeLimit(
  candidates: readonly { readonly runtimeInstanceId: string; readonly status: string }[],
  prefix: string,
  maxRuntimeInstances: number,
): boolean {
  const alive = candidates.filter((c) => c.runtimeInstanceId.startsWith(`${prefix}-`) && !LOST.has(c.status)).length;
  return alive >= maxRuntimeInstances;
}
const LOST: ReadonlySet<string> = new Set(["suspected", "fenced", "retired"]);
