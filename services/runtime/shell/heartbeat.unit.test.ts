import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { decodeJson, Heartbeat } from "../../../contracts/index.ts";
import { HeartbeatPublisher } from "./heartbeat.ts";
import type { RuntimeInstance } from "./runtime-instance.ts";

describe("heartbeats when a place frees (in memory, fake timers: proves no transport)", () => {
  let free = 0;
  let beats: Heartbeat[] = [];
  const publisher = (intervalMs: number) =>
    new HeartbeatPublisher(
      {
        subject: "drover-hb.rt-1",
        runtimeInstanceId: "rt-1",
        hostIncarnation: "pid:4242:1700000000000",
        instance: {
          localFacts: () => ({
            workers: 4,
            activeWorkers: 4,
            availableWorkers: 0,
            queuedRuns: 0,
            runningRuns: 4,
            parkedRuns: 0,
            availableSlots: free,
            paused: false,
            draining: false,
          }),
        } as unknown as RuntimeInstance,
        publish: (_s, d) => beats.push(decodeJson(Heartbeat, d, "heartbeat")),
        clock: { now: () => new Date() },
        log: (f) => {
          throw new Error(JSON.stringify(f));
        },
      },
      intervalMs,
    );
  beforeEach(() => {
    vi.useFakeTimers();
    beats = [];
    free = 0;
  });
  afterEach(() => vi.useRealTimers());

  it("one extra beat 50 ms after places free, however many free meanwhile, with the new count and the next beat number", () => {
    const hb = publisher(250);
    hb.start();
    expect(beats.map((b) => [b.beat, b.availableSlots])).toEqual([[1, 0]]);
    free = 2;
    hb.soon();
    vi.advanceTimersByTime(20);
    hb.soon();
    vi.advanceTimersByTime(29);
    expect(beats).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(beats.map((b) => [b.beat, b.availableSlots])).toEqual([
      [1, 0],
      [2, 2],
    ]);
    vi.advanceTimersByTime(200); // the interval goes on as before
    expect(beats.map((b) => b.beat)).toEqual([1, 2, 3]);
    hb.stop();
  });

  it("nothing early before start or after stop; a short interval bounds the delay", () => {
    const hb = publisher(20);
    hb.soon();
    vi.advanceTimersByTime(100);
    expect(beats).toHaveLength(0);
    hb.start();
    hb.soon();
    vi.advanceTimersByTime(19);
    expect(beats.map((b) => b.beat)).toEqual([1]);
    vi.advanceTimersByTime(1);
    expect(beats.map((b) => b.beat)).toEqual([1, 2, 3]); // the early beat and the interval's, both at 20 ms
    hb.soon();
    hb.stop();
    vi.advanceTimersByTime(100);
    expect(beats).toHaveLength(3);
  });
});
