/**
 * The runtime starts this provisioner is driving now (a claimed member's bind, a cold host start,
 * each up to capacity published), and a wait for none (or a bound): what the warm pool's refill
 * yields to. A refill member start is a whole runtime process booting; on two cores, four of them
 * started while ten claimed members were binding stretched each bind from
 * ~0.5 s to ~2.4 s (the P=5 proof's stage trace, proof/recovery-stages.ts; docs/decisions.md).
 * A loss (a runtime this provisioner published exited) is yielded to as well for `lossSettleMs`:
 * its replacement's bind is followed at once by the resumes of the lost runtime's executions on it
 * (W3: a member booting from ~0.3 s after the kill took ~0.2 s of CPU from their first second).
 */
export class BusyStarts {
  private count = 0;
  private waiters: (() => void)[] = [];
  private lossAt = Number.NEGATIVE_INFINITY;

  /**
   * `onTrack`: told of each start as it goes in flight (boot-hold.ts); `lossSettleMs`: how long after
   * a loss `quiet` still waits (0: a loss is not waited for); `now`: the clock, ms.
   */
  constructor(
    private readonly onTrack: () => void = () => undefined,
    private readonly lossSettleMs = 0,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** A runtime this provisioner published exited: its replacement's bind and resumes are coming. */
  lost(): void {
    this.lossAt = this.now();
  }

  /** Counts `work` as a start in flight until it settles. */
  track<T>(work: Promise<T>): Promise<T> {
    this.count++;
    this.onTrack();
    return work.finally(() => {
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
   * Resolves once no start is in flight and the last loss is `lossSettleMs` old, or after `maxMs` in
   * all (a long Pod start never starves the pool).
   */
  async quiet(maxMs: number): Promise<void> {
    const until = this.now() + maxMs;
    for (;;) {
      const left = until - this.now();
      if (left <= 0) return;
      if (this.count > 0) {
        await this.noStart(left);
        continue;
      }
      const settle = this.lossAt + this.lossSettleMs - this.now();
      if (settle <= 0) return;
      await new Promise((ok) => setTimeout(ok, Math.min(settle, left)));
    }
  }

  /** Resolves once no start is in flight, or after `maxMs`. */
  private noStart(maxMs: number): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((ok) => {
      const done = () => {
        clearTimeout(timer);
        ok();
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== done);
        ok();
      }, maxMs);
      this.waiters.push(done);
    });
  }
}
