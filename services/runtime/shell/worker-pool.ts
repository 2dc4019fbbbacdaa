/**
 * The runtime's N workers as a counting semaphore shared by every run. Waiters are served FIFO so a
 * run that asked first gets the next free worker (no starvation across runs).
 */
export class WorkerPool {
  private active = 0;
  private readonly waiters: (() => void)[] = [];

  constructor(readonly size: number) {}

  get activeWorkers(): number {
    return this.active;
  }
  get availableWorkers(): number {
    return Math.max(0, this.size - this.active);
  }

  /** Takes a worker if one is free right now; the caller must `release()` it exactly once. */
  tryAcquire(): boolean {
    if (this.active >= this.size || this.waiters.length > 0) return false;
    this.active++;
    return true;
  }

  /** Waits for a free worker (FIFO). The signal abandons the wait without taking one. */
  acquire(signal?: AbortSignal): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise((ok, fail) => {
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        this.active++;
        ok();
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(grant);
        if (i >= 0) this.waiters.splice(i, 1);
        fail(signal?.reason ?? new Error("aborted"));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(grant);
    });
  }

  release(): void {
    this.active = Math.max(0, this.active - 1);
    const next = this.waiters.shift();
    if (next) next();
  }
}
