/**
 * The runtime starts this provisioner is driving now (a claimed member's bind, a cold host start,
 * each up to capacity published), and a wait for none (or a bound): what the warm pool's refill
 * yields to. A refill member start is a whole runtime process booting; on two cores, four of them
 * started while ten claimed members were binding stretched each bind from
 * ~0.5 s to ~2.4 s (the P=5 proof's stage trace, proof/recovery-stages.ts; docs/decisions.md).
 */
export class BusyStarts {
  private count = 0;
  private waiters: (() => void)[] = [];

  /** `onTrack`: told of each start as it goes in flight (boot-hold.ts). */
  constructor(private readonly onTrack: () => void = () => undefined) {}

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

  /** Resolves once no start is in flight, or after `maxMs` (a long Pod start never starves the pool). */
  quiet(maxMs: number): Promise<void> {
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
