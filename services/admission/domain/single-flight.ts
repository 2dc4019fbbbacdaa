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
