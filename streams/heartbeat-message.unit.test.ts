import { describe, expect, it, vi } from "vitest";
import { decodeJson, Heartbeat } from "../contracts/index.ts";
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

describe("a stored heartbeat's check (pure decoding: proves no transport)", () => {
  const refusal = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return (e as Error).message;
    }
    return "accepted";
  };

  it("a valid beat is checked by the compiled schema, not by zod's runtime parser", () => {
    const runtime = vi.spyOn(Heartbeat, "safeParse");
    try {
      expect(stored("2026-12-04T10:00:00.000Z", Date.parse("2026-12-04T10:00:00.040Z")).runtimeInstanceId).toBe("rt-a");
      expect(runtime).not.toHaveBeenCalled();
    } finally {
      runtime.mockRestore();
    }
  });

  it("an invalid beat is refused with the runtime parser's issues, and a payload naming another runtime as forged", () => {
    const bad = JSON.parse(new TextDecoder().decode(beat("2026-12-04T10:00:00.000Z"))) as Record<string, unknown>;
    const msg = (o: unknown, subject = "drover-hb.rt-a") => ({
      subject,
      data: new TextEncoder().encode(JSON.stringify(o)),
      seq: 7,
    });
    for (const o of [
      { ...bad, beat: -1 },
      { ...bad, at: "yesterday" },
      { ...bad, extra: 1 },
      { ...bad, type: "beat" },
    ]) {
      const m = msg(o);
      const runtimeParser = refusal(() => decodeJson(Heartbeat, m.data, "heartbeat", { seq: 7, subject: m.subject }));
      expect(runtimeParser).toMatch(/^heartbeat is invalid/);
      expect(refusal(() => storedHeartbeat("drover-hb", m, 0))).toBe(runtimeParser);
    }
    expect(refusal(() => storedHeartbeat("drover-hb", msg(bad, "drover-hb.rt-b"), 0))).toMatch(
      /payload names runtime rt-a/,
    );
  });
});
