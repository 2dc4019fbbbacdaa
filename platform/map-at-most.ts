/**
 * `f` over `items`, at most `n` running at once (a new one starts as soon as one ends); the results
 * in the order of `items`. The first rejection rejects the whole (the others still run to their end).
 */
export async function mapAtMost<T, R>(items: readonly T[], n: number, f: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await f(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.max(0, Math.min(n, items.length)) }, worker));
  return out;
}
