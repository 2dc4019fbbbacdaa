import { describe, expect, it } from "vitest";
import { storedHeartbeat } from "./heartbeat-message.ts";

const beat = (at: string) =>
  new TextEncoder().encode(
    JSON.stringify({
      type: "heartbeat",
      runtimeInstanceId: "rt-a",
      hostIncarnation: "pid:1:1",
      beat: 3,
      at,
      workers: 1,
      activeWorkers: 0,
      availableWorkers: 1,
      queuedRuns: 0,
      runningRuns: 0,
      availableSlots: 2,
      paused: false,
      draining: false,
    }),
  );
const stored = (at: string, storedAtMs: number) =>
  storedHeartbeat("drover-hb", { subject: "drover-hb.rt-a", data: beat(at), seq: 7 }, storedAtMs);

describe("a stored heartbeat's two times (pure decoding: proves no transport)", () => {
  it("`at` is the stored time and `takenAt` the runtime's own, when the beat was stored after it was taken", () => {
    const hb = stored("2026-12-04T10:00:00.000Z", Date.parse("2026-12-04T10:00:00.040Z"));
    expect([hb.at, hb.takenAt]).toEqual(["2026-12-04T10:00:00.040Z", "2026-12-04T10:00:00.000Z"]);
  });

  it("a `takenAt` after the stored time is the stored time (a beat cannot be taken after it was stored)", () => {
    const hb = stored("2026-12-04T10:05:00.000Z", Date.parse("2026-12-04T10:00:00.040Z"));
    expect([hb.at, hb.takenAt]).toEqual(["2026-12-04T10:00:00.040Z", "2026-12-04T10:00:00.040Z"]);
  });
});
