/**
 * The process groups of warm pool members still booting (spawned, not yet announced), which a
 * provisioner may hold while runtime starts in flight want the CPU: SIGSTOP to each group, SIGCONT
 * when released. A member boot is background work (a whole runtime process loading its code, ~1 s
 * of CPU); a bind or a cold start is what a run waits for. A held process keeps its pid and start
 * time (its incarnation) and is killed as any other: SIGKILL ends a stopped process too.
 *
 * A member whose spawn comes while a hold is on is not spawned until the hold ends (`admit`): the
 * spawn is a synchronous fork/exec on the provisioner's main thread (~10–100 ms each at load 15, a
 * refill round of four blocked it ~200–450 ms beside the binds' last appends), and a member spawned
 * then would boot beside the starts unheld (the hold stops only the groups booting when it began).
 */
export class BootingGroups {
  private readonly booting = new Set<number>();
  private readonly stopped = new Set<number>();
  /** Spawns waiting for the hold to end (`admit`): each resolves true to spawn, false when cancelled. */
  private deferred: ((spawn: boolean) => void)[] = [];
  private holding = false;

  /** Resolves true at once unless a hold is on, else once it ends; false if `cancel` came first (do not spawn). */
  admit(): Promise<boolean> {
    if (!this.holding) return Promise.resolve(true);
    return new Promise((r) => this.deferred.push(r));
  }

  /** The spawns waiting for the hold resolve false (the strategy is stopping its hosts); returns how many. */
  cancel(): number {
    return this.release(false);
  }

  /** `pgid` (a member's own group, led by it) started booting. */
  add(pgid: number): void {
    this.booting.add(pgid);
  }

  /** `pgid`'s boot ended (announced, failed or exited): it is never held again, and continued if held. */
  remove(pgid: number): void {
    this.booting.delete(pgid);
    if (this.stopped.delete(pgid)) signal(pgid, "SIGCONT");
  }

  /**
   * Stops (true) every booting group not stopped yet, or continues (false) every stopped one and lets
   * the deferred spawns go; returns how many were signalled (and, continuing, spawns let go). A hold
   * that stops nothing is not on (no spawn waits for it: nothing would end it).
   */
  hold(on: boolean): number {
    let n = 0;
    if (on) {
      for (const g of this.booting)
        if (!this.stopped.has(g) && signal(g, "SIGSTOP")) {
          this.stopped.add(g);
          n++;
        }
      if (n > 0) this.holding = true;
      return n;
    }
    for (const g of this.stopped) if (signal(g, "SIGCONT")) n++;
    this.stopped.clear();
    return n + this.release(true);
  }

  private release(spawn: boolean): number {
    this.holding = false;
    const waiting = this.deferred;
    this.deferred = [];
    for (const r of waiting) r(spawn);
    return waiting.length;
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
