/**
 * Process groups of runtimes this process spawned and has not yet seen exit. A runtime is a
 * detached group leader (so a signal to the group reaches anything it spawned); detached children
 * survive their parent, so on exit we SIGKILL every group still tracked: a test run or a stopped
 * provisioner leaves no runtime behind. A group is only signalled while its leader is our
 * un-reaped child, so its id cannot have been reused by another group.
 */
const live = new Set<number>();
let hooked = false;

function killAll(): void {
  for (const pgid of live) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
  live.clear();
}

/** Tracks a group led by our child `pgid` until `untrackGroup`; installs the exit hook once. */
export function trackGroup(pgid: number): void {
  if (!hooked) {
    hooked = true;
    process.once("exit", killAll);
  }
  live.add(pgid);
}

/** Stops tracking once the leader has exited (after that its id may be reused). */
export function untrackGroup(pgid: number): void {
  live.delete(pgid);
}

/**
 * SIGKILLs the group led by our live child `pgid`. Returns false when the group no longer exists.
 * Callers guarantee the leader has not been reaped yet (no `exit` event seen).
 */
export function killGroup(pgid: number): boolean {
  try {
    process.kill(-pgid, "SIGKILL");
    return true;
  } catch {
    return false;
  }
}
