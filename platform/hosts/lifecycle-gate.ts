/**
 * One lifecycle gate per key (RuntimeInstanceId): start and kill of one runtime never interleave
 * inside this process (hosts.md "Common lifecycle rules"). Across control-plane replicas the gate is
 * the conditional append on the runtime aggregate, not this class.
 */
export class LifecycleGate {
  private readonly tails = new Map<string, Promise<unknown>>();

  /**
   * Runs `fn` after every earlier `run` for the same key has settled, and returns its result.
   * A failing `fn` does not block later callers. Keys with nothing queued are forgotten.
   */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.tails.set(key, tail);
    try {
      return await next;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
