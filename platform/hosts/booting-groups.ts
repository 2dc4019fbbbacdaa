/**
 * The process groups of warm pool members still booting (spawned, not yet announced), which a
 * provisioner may hold while runtime starts in flight want the CPU: SIGSTOP to each group, SIGCONT
 * when released. A member boot is background work (a whole runtime process loading its code, ~1 s
 * of CPU); a bind or a cold start is what a run waits for. A held process keeps its pid and start
 * time (its incarnation) and is killed as any other: SIGKILL ends a stopped process too.
 */
export class BootingGroups {
  private readonly booting = new Set<number>();
  private readonly stopped = new Set<number>();

  /** `pgid` (a member's own group, led by it) started booting. */
  add(pgid: number): void {
    this.booting.add(pgid);
  }

  /** `pgid`'s boot ended (announced, failed or exited): it is never held again, and continued if held. */
  remove(pgid: number): void {
    this.booting.delete(pgid);
    if (this.stopped.delete(pgid)) signal(pgid, "SIGCONT");
  }

  /** Stops (true) every booting group not stopped yet, or continues (false) every stopped one; returns how many were signalled. */
  hold(on: boolean): number {
    let n = 0;
    if (on) {
      for (const g of this.booting)
        if (!this.stopped.has(g) && signal(g, "SIGSTOP")) {
          this.stopped.add(g);
          n++;
        }
      return n;
    }
    for (const g of this.stopped) if (signal(g, "SIGCONT")) n++;
    this.stopped.clear();
    return n;
  }
}

/** Signals the group `pgid` leads; false when it no longer exists. */
function signal(pgid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, sig);
    return true;
  } catch {
    return false;
  }
}
