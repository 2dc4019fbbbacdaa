/**
 * Placements a pass runs at once. 16, not 8: in a burst, more placements in flight put more of their
 * Redis calls and appends into each socket write and read (admission's and nats-server's), about 10–20%
 * less CPU per run in both (docs/decisions.md, row "16 placements at once").
 */
export const PARALLEL = 16;

/**
 * Runs `f` over the runs `take` gives, in order, at most PARALLEL at once (a run is taken only after
 * every earlier one was); stops taking once `stop()` says so, after at least PARALLEL (progress).
 * `express()` takes one more run at once, beside those in flight and whether or not `stop()` says
 * so (also after `take` ran dry, while placements are still in flight: a run that joined since),
 * unless `take` has none or `done` resolved; `done` waits for those too.
 */
export function placeAll<T>(
  take: () => T | undefined,
  stop: () => boolean,
  f: (r: T) => Promise<void>,
): { readonly done: Promise<void>; readonly express: () => void } {
  let taken = 0;
  let done = false;
  const extra = new Set<Promise<void>>();
  const pull = () => {
    if (done) return undefined;
    const r = take();
    if (r) taken++;
    else done = true;
    return r;
  };
  const next = () => (taken >= PARALLEL && stop() ? undefined : pull());
  const worker = async () => {
    for (let r = next(); r; r = next()) await f(r);
  };
  let closed = false;
  // Not `pull`: after `take` ran dry (the workers stopped), a run may have joined since.
  const express = () => {
    const r = closed ? undefined : take();
    if (!r) return;
    taken++;
    const p = f(r).finally(() => extra.delete(p));
    extra.add(p);
  };
  const all = async () => {
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    while (extra.size > 0) await Promise.all([...extra]);
    closed = true;
  };
  return { done: all(), express };
}
