import type { Clock } from "../../../platform/clock.ts";

/**
 * The execution loop's wake-up (services/runtime/shell/execution.ts): `poke` says something changed
 * (a step finished, a wait started listening, a cancel came, the deadline passed); `changed` resolves
 * at the next poke, at once when one is pending, or at `wakeAt` (a retry time). One waiter at a time:
 * the loop.
 */
export class Wake {
  private dirty = false;
  private waiter: (() => void) | undefined;

  constructor(private readonly clock: Clock) {}

  /** A change not yet looked at. */
  get pending(): boolean {
    return this.dirty;
  }

  poke(): void {
    this.dirty = true;
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  changed(wakeAt?: number): Promise<void> {
    if (this.dirty) {
      this.dirty = false;
      return Promise.resolve();
    }
    return new Promise((ok) => {
      const timer =
        wakeAt === undefined
          ? undefined
          : setTimeout(() => this.poke(), Math.max(0, wakeAt - this.clock.now().getTime()));
      this.waiter = () => {
        if (timer) clearTimeout(timer);
        this.dirty = false;
        ok();
      };
    });
  }
}
