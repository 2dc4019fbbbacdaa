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

  it("after a loss, waits until the loss is lossSettleMs old even with no start in flight, within the bound", async () => {
    vi.useFakeTimers();
    try {
      const b = new BusyStarts(() => undefined, 1_500);
      b.lost();
      await vi.advanceTimersByTimeAsync(300);
      let quiet = false;
      const q = b.quiet(3_000).then(() => (quiet = true));
      await vi.advanceTimersByTimeAsync(1_199);
      expect(quiet).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await q;
      expect(quiet).toBe(true);
      // An old loss is not waited for; nor is one beyond the bound.
      await b.quiet(3_000);
      b.lost();
      let bounded = false;
      const q2 = b.quiet(500).then(() => (bounded = true));
      await vi.advanceTimersByTimeAsync(500);
      await q2;
      expect(bounded).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it("after a loss and a start in flight, waits for both: the start's end and the loss's settle", async () => {
    vi.useFakeTimers();
    try {
      const b = new BusyStarts(() => undefined, 1_500);
      b.lost();
      let end!: () => void;
      void b.track(new Promise<void>((ok) => (end = ok)));
      let quiet = false;
      const q = b.quiet(3_000).then(() => (quiet = true));
      await vi.advanceTimersByTimeAsync(200);
      end();
      await vi.advanceTimersByTimeAsync(1_000);
      expect(quiet).toBe(false);
      await vi.advanceTimersByTimeAsync(300);
      await q;
      expect(quiet).toBe(true);
      // A start in flight past the loss's settle is still waited for.
      b.lost();
      let end2!: () => void;
      void b.track(new Promise<void>((ok) => (end2 = ok)));
      let quiet2 = false;
      const q2 = b.quiet(3_000).then(() => (quiet2 = true));
      await vi.advanceTimersByTimeAsync(2_000);
      expect(quiet2).toBe(false);
      end2();
      await q2;
      expect(quiet2).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
