import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../streams/index.ts";
import { startupLatencies } from "./startup-latencies.ts";

// Hand-built log entries: proves the arithmetic over a log only, no transport.
let seq = 0;
const at = (ms: number, subject: string, type: string, data: Record<string, unknown> = {}): StoredEvent =>
  ({ seq: ++seq, subject, time: new Date(ms), event: { type, data } }) as unknown as StoredEvent;
const rt = (id: string, name: string) => `d.drover.runtime.${id}.${name}`;

function runtime(id: string, so: string, t0: number, hostAt: number, publishedAt: number, source?: string) {
  return [
    at(t0, `d.drover.scaleout.${so}.requested`, "scaleout.requested"),
    at(t0 + 1, rt(id, "registered"), "runtime.registered", { scaleOutRequestId: so }),
    at(hostAt, rt(id, "host-started"), "runtime.host-started", source ? { convergenceSource: source } : {}),
    at(hostAt, rt(id, "readiness-layer-passed"), "runtime.readiness-layer-passed", { layer: "host" }),
    at(publishedAt, rt(id, "capacity-published"), "runtime.capacity-published"),
  ];
}

describe("proof start-up latencies from the log (pure: proves no transport)", () => {
  it("splits request → capacity published into cold starts and warm pool claims (convergenceSource warm-pool:…)", () => {
    const log = [
      ...runtime("rt-a", "so-a", 1000, 3000, 3100),
      ...runtime("rt-b", "so-b", 2000, 2100, 2500, "warm-pool:pool-aaaaaaaaaaaa"),
      ...runtime("rt-c", "so-c", 5000, 9000, 9200, "warm-pool:pool-bbbbbbbbbbbb"),
      // A pool member's own events never count as a runtime started from a scale-out.
      at(100, rt("pool-aaaaaaaaaaaa", "pool-member-registered"), "runtime.pool-member-registered"),
    ];
    const s = startupLatencies(log);
    expect(s.published).toEqual({ p50: 2100, p99: 4200 });
    expect(s.publishedCold).toEqual({ p50: 2100, p99: 2100 });
    expect(s.publishedWarm).toEqual({ p50: 500, p99: 4200 });
    expect(s.hostReady).toEqual({ p50: 2000, p99: 4000 });
    expect(Number.isNaN(s.route.p50)).toBe(true);
  });
});
