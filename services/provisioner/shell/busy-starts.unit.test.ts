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
  it("waits settleMs after the last start ended, again if another start ends meanwhile, never past the bound", async () => {
    vi.useFakeTimers();
    try {
      const b = new BusyStarts(1_000);
      let endA!: () => void, endB!: () => void;
      const a = b.track(new Promise<void>((ok) => (endA = ok)));
      let quiet = false;
      const q = b.quiet(3_000).then(() => (quiet = true));
      await vi.advanceTimersByTimeAsync(200);
      endA();
      await a;
      await vi.advanceTimersByTimeAsync(999);
      expect(quiet).toBe(false);
      const bb = b.track(new Promise<void>((ok) => (endB = ok)));
      await vi.advanceTimersByTimeAsync(100);
      endB();
      await bb;
      await vi.advanceTimersByTimeAsync(999);
      expect(quiet).toBe(false); // 1 s after the second start ended, not the first
      await vi.advanceTimersByTimeAsync(1);
      await q;
      expect(quiet).toBe(true);
      // A start that never ends: the bound still holds.
      void b.track(new Promise<void>(() => undefined));
      let bounded = false;
      const q2 = b.quiet(3_000).then(() => (bounded = true));
      await vi.advanceTimersByTimeAsync(2_999);
      expect(bounded).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await q2;
      expect(bounded).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
