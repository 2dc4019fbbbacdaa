/**
 * Calls of one Redis script made while an earlier call of it awaits its answer leave together, as
 * one script run over all of them (`send`), at the check phase of the event loop; a call made with
 * none in flight (and none held) is sent at once, alone. As the publish gate does for appends
 * (streams/publish-gate.ts): a burst's placements share a command, a round trip and a socket write,
 * and a lone call waits for nothing. Calls keep their order: a batch runs them in the order made,
 * and batches leave (and Redis runs them) in the order formed. `send` answers one result per item,
 * in order; if it fails, every call of its batch fails with its error.
 */
export function scriptBatcher<I, R>(send: (items: readonly I[]) => Promise<readonly R[]>): (item: I) => Promise<R> {
  let inFlight = 0;
  let held: { item: I; ok: (r: R) => void; fail: (e: unknown) => void }[] = [];
  const run = (batch: typeof held): void => {
    inFlight++;
    send(batch.map((b) => b.item)).then(
      (results) => {
        inFlight--;
        batch.forEach((b, i) =>
          i < results.length
            ? b.ok(results[i]!)
            : b.fail(new Error(`batched script answered ${results.length} of ${batch.length}`)),
        );
      },
      (e: unknown) => {
        inFlight--;
        for (const b of batch) b.fail(e);
      },
    );
  };
  const flush = (): void => {
    const batch = held;
    held = [];
    if (batch.length > 0) run(batch);
  };
  return (item) =>
    new Promise<R>((ok, fail) => {
      if (inFlight === 0 && held.length === 0) return run([{ item, ok, fail }]);
      if (held.length === 0) setImmediate(flush);
      held.push({ item, ok, fail });
    });
}
