import { describe, expect, it } from "vitest";
import { PARALLEL, placeAll } from "./place-all.ts";

/** Items 1..n; f waits until released, so the test sees what is in flight. */
const harness = (total: number, stopAfter = Infinity) => {
  let n = total;
  let nextItem = 1;
  const inFlight = new Set<number>();
  const started: number[] = [];
  const release = new Map<number, () => void>();
  const pool = placeAll(
    () => (nextItem <= n ? nextItem++ : undefined),
    () => started.length >= stopAfter,
    (r) =>
      new Promise<void>((ok) => {
        started.push(r);
        inFlight.add(r);
        release.set(r, () => {
          inFlight.delete(r);
          ok();
        });
      }),
  );
  return {
    pool,
    inFlight,
    started,
    release: (rs: number[]) => rs.forEach((r) => release.get(r)?.()),
    more: (k: number) => (n += k),
  };
};

const tick = () => new Promise((ok) => setTimeout(ok, 0));

describe("a pass's placements: at most PARALLEL at once, plus one at once per express (in-memory; proves no transport)", () => {
  it("runs PARALLEL at once; express starts one more at once, beside them", async () => {
    const h = harness(100);
    await tick();
    expect(h.inFlight.size).toBe(PARALLEL);
    h.pool.express();
    await tick();
    expect(h.inFlight.size).toBe(PARALLEL + 1);
    expect(h.started.at(-1)).toBe(PARALLEL + 1);
  });

  it("express takes its run even once the pass stopped taking (its yield), and done waits for it", async () => {
    const h = harness(100, PARALLEL);
    await tick();
    expect(h.started.length).toBe(PARALLEL);
    h.pool.express(); // stop() says so already: the workers take nothing more
    let done = false;
    void h.pool.done.then(() => (done = true));
    await tick();
    expect(h.started.length).toBe(PARALLEL + 1);
    h.release(h.started.slice(0, PARALLEL));
    await tick();
    expect(h.started.length).toBe(PARALLEL + 1);
    expect(done).toBe(false); // the express run is still in flight
    h.release([PARALLEL + 1]);
    await h.pool.done;
  });

  it("express takes a run that arrived after take ran dry while placements are still in flight", async () => {
    const h = harness(3);
    await tick();
    expect(h.started).toEqual([1, 2, 3]);
    let done = false;
    void h.pool.done.then(() => (done = true));
    h.more(1); // a run that joined the pull (fair-pull.ts join) once it had nothing left
    h.pool.express();
    await tick();
    expect(h.started).toEqual([1, 2, 3, 4]);
    h.release([1, 2, 3]);
    await tick();
    expect(done).toBe(false);
    h.release([4]);
    await h.pool.done;
  });

  it("express does nothing once take ran dry or done resolved", async () => {
    const h = harness(3);
    await tick();
    h.release([1, 2, 3]);
    await h.pool.done;
    h.pool.express();
    await tick();
    expect(h.started).toEqual([1, 2, 3]);
  });
});
