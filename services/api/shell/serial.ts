/**
 * Runs tasks one at a time per key, in arrival order, within this process. Used to make the
 * quota check and the append of one tenant's submissions a single step here; it does not span
 * API replicas (admission enforces the quota across them).
 */
export function serialPerKey(): <T>(key: string, task: () => Promise<T>) => Promise<T> {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(key: string, task: () => Promise<T>): Promise<T> => {
    const prev = tails.get(key) ?? Promise.resolve();
    const run = prev.then(task, task);
    const tail = run.catch(() => undefined);
    tails.set(key, tail);
    // Forget the key once its queue drains, so the map does not grow with every tenant ever seen.
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return run;
  };
}
