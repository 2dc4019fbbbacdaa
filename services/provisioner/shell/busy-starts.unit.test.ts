import { describe, expect, it, vi } from "vitest";
import { BusyStarts } from "./busy-starts.ts";

// In-process scheduling only: proves no transport and no host.
describe("BusyStarts: the refill's wait for the starts in flight (in-process, proves no transport)", () => {
  it("is quiet at once with no start in flight", async () => {
    const b = new BusyStarts();
    expect(b.busy).toBe(false);
    await b.quiet(10_000);
  });

  it("waits until every tracked start settled, rejected ones included", async () => {
    const b = new BusyStarts();
    let endA!: () => void, failB!: (e: Error) => void;
    const a = b.track(new Promise<void>((ok) => (endA = ok)));
    const bb = b.track(new Promise<void>((_, no) => (failB = no))).catch(() => "failed");
    let quiet = false;
    const q = b.quiet(60_000).then(() => (quiet = true));
    endA();
    await a;
    await Promise.resolve();
    expect(quiet).toBe(false);
    expect(b.busy).toBe(true);
    failB(new Error("store down"));
    expect(await bb).toBe("failed");
    await q;
    expect(quiet).toBe(true);
    expect(b.busy).toBe(false);
  });

  it("gives up waiting after the bound while a start is still in flight", async () => {
    vi.useFakeTimers();
    try {
      const b = new BusyStarts();
      void b.track(new Promise<void>(() => undefined));
      let quiet = false;
      const q = b.quiet(3_000).then(() => (quiet = true));
      await vi.advanceTimersByTimeAsync(2_999);
      expect(quiet).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await q;
      expect(quiet).toBe(true);
      expect(b.busy).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
