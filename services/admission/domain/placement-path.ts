import type { RunState } from "../../../aggregates/run.ts";

/** A run's way through a placement, in order: a move forward along it frees nothing and adds no work. */
const PLACEMENT_PATH = ["submitted", "queued", "admitted", "dispatched", "started"];

/**
 * The run was queued (again) or moved forward to `admitted`, `dispatched` or `started`, and nothing
 * else a pass reads of it changed (no cancel, recovery or resume set or cleared): its tenant's places
 * and quota count only went up, no run became new work, and a run just queued waits for what a pass
 * is started by anyway (a place freed or announced, a run ending, a scale-out event, the tick). So no
 * decision an admission pass could take changed with it, and such changes start no pass (under a
 * flood they were four of a run's six, each a pass with a capacity read: docs/decisions.md).
 */
export function movedAlongPlacement(before: RunState, after: RunState): boolean {
  const from = PLACEMENT_PATH.indexOf(before.status);
  const to = PLACEMENT_PATH.indexOf(after.status);
  return (
    from >= 0 &&
    to >= 1 &&
    (to > from || (to === 1 && from === 1)) &&
    before.cancelRequested === after.cancelRequested &&
    before.recoveryPending === after.recoveryPending &&
    before.resume === after.resume
  );
}
