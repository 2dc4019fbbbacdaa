/**
 * The runtime starts this provisioner is driving now (a claimed member's bind, a cold host start,
 * each up to capacity published), and a wait for none (or a bound): what the warm pool's refill
 * yields to. A refill member start is a whole runtime process booting; on two cores, four of them
 * started while ten claimed members were binding stretched each bind from
 * ~0.5 s to ~2.4 s (the P=5 proof's stage trace, proof/recovery-stages.ts; docs/decisions.md).
 * The wait also covers `settleMs` after the last start ended: a recovery start's capacity is followed
 * by its run's placement and the execution's resume on the new runtime (a history read this process
 * answers), which members booting at once slowed the same way.
 */
export class BusyStarts {
  private count = 0;
  private lastEndMs = Number.NEGATIVE_INFINITY;
  private waiters: (() => void)[] = [];

  constructor(
    private readonly settleMs = 0,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Counts `work` as a start in flight until it settles. */
  track<T>(work: Promise<T>): Promise<T> {
    this.count++;
    return work.finally(() => {
      this.lastEndMs = this.nowMs();
      if (--this.count > 0) return;
      const ws = this.waiters;
      this.waiters = [];
      for (const w of ws) w();
    });
  }

  get busy(): boolean {
    return this.count > 0;
  }

  /**
   * Resolves once no start is in flight and none ended in the last `settleMs`, or after `maxMs` (a
   * long Pod start never starves the pool).
   */
  quiet(maxMs: number): Promise<void> {
    const settledIn = () => this.lastEndMs + this.settleMs - this.nowMs();
    if (this.count === 0 && settledIn() <= 0) return Promise.resolve();
    return new Promise((ok) => {
      let settle: ReturnType<typeof setTimeout> | undefined;
      const done = () => {
        clearTimeout(bound);
        clearTimeout(settle);
        this.waiters = this.waiters.filter((w) => w !== check);
        ok();
      };
      // Looked at again when the last start ends, and when the settle time since the last end has passed.
      const check = () => {
        clearTimeout(settle);
        if (this.count > 0) return void this.waiters.push(check);
        const left = settledIn();
        if (left <= 0) return done();
        settle = setTimeout(check, left);
      };
      const bound = setTimeout(done, maxMs);
      check();
    });
  }
}
