import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../streams/index.ts";
import type { KillRecord } from "./assertions.ts";
import { recoveryStageTraces, stageQuantiles, stageSection, stageTable } from "./recovery-stages.ts";

// Hand-built log entries: proves the arithmetic over a log only, no transport.
let seq = 0;
const at = (ms: number, subject: string, type: string, data: Record<string, unknown> = {}): StoredEvent =>
  ({ seq: ++seq, subject, time: new Date(ms), event: { type, data } }) as unknown as StoredEvent;
const rt = (id: string, name: string) => `d.drover.runtime.${id}.${name}`;
const kill = (runtimeInstanceId: string, executionId: string, killedAtMs: number): KillRecord => ({
  tenantId: "t-a",
  runtimeInstanceId,
  hostIncarnation: "pid:1:1",
  executionId,
  sharedRunId: "run-1",
  completedAtKill: 25,
  killedAtMs,
  stepDurableAtMs: killedAtMs - 5,
  stepSeenAtMs: killedAtMs - 2,
});

describe("proof recovery stage trace from the log (pure: proves no transport)", () => {
  it("times each stage of a kill's recovery from the kill, the replacement found by the resumed execution and the run's placement on it", () => {
    const log = [
      // The run's first placement, on the runtime that is killed: not the replacement's.
      at(900, "d.drover.run.t-a.run-1.admitted", "run.admitted", { runtimeInstanceId: "rt-old" }),
      at(1010, rt("rt-old", "host-exited"), "runtime.host-exited"),
      at(1020, rt("rt-old", "suspected"), "runtime.suspected"),
      at(1030, rt("rt-old", "fenced"), "runtime.fenced"),
      at(1100, "d.drover.exec.t-a.exec-1.paused-for-recovery", "exec.paused-for-recovery"),
      at(1150, "d.drover.scaleout.t-a.so-1.requested", "scaleout.requested"),
      at(1200, rt("rt-new", "registered"), "runtime.registered", { scaleOutRequestId: "so-1" }),
      at(1200, rt("rt-new", "host-started"), "runtime.host-started", { convergenceSource: "warm-pool:pool-x" }),
      at(1400, rt("rt-new", "readiness-layer-passed"), "runtime.readiness-layer-passed", { layer: "host" }),
      at(1450, rt("rt-new", "readiness-layer-passed"), "runtime.readiness-layer-passed", { layer: "command" }),
      at(1460, rt("rt-new", "capacity-published"), "runtime.capacity-published"),
      at(1470, "d.drover.run.t-a.run-1.admitted", "run.admitted", { runtimeInstanceId: "rt-new" }),
      at(1480, "d.drover.run.t-a.run-1.dispatched", "run.dispatched", { runtimeInstanceId: "rt-new" }),
      at(1500, "d.drover.forensics.t-a.fx-1.replacement-runtime-selected", "forensics.replacement-runtime-selected", {
        executionId: "exec-1",
        replacementRuntimeInstanceId: "rt-new",
      }),
      at(1700, "d.drover.exec.t-a.exec-1.resumed", "exec.resumed", { runtimeInstanceId: "rt-new" }),
    ];
    const [t] = recoveryStageTraces(log, [kill("rt-old", "exec-1", 1000)]);
    expect(t!.replacement).toBe("rt-new");
    expect(t!.warm).toBe(true);
    expect(t!.at).toMatchObject({
      suspected: 20,
      fenced: 30,
      paused: 100,
      scaleOutRequested: 150,
      registered: 200,
      hostStarted: 200,
      layerHost: 400,
      layerCommand: 450,
      capacityPublished: 460,
      admitted: 470,
      dispatched: 480,
      replacementSelected: 500,
      resumed: 700,
    });
    expect(Number.isNaN(t!.at.localRunRegistered)).toBe(true);
    expect(stageQuantiles([t!]).resumed).toEqual({ p50: 700, p99: 700 });
    expect(stageTable([t!]).split("\n")).toHaveLength(4);
    // The bench's print (bench/recovery.bench.ts) and `drover proof`'s (indented) share it.
    expect(stageSection([t!], " at P=5, warm pool 25").join("\n")).toBe(
      `stages at P=5, warm pool 25 (ms after each kill; w: warm pool member, c: cold start):\n${stageTable([t!])}`,
    );
    expect(stageSection([t!], "", "  ").every((l) => l.startsWith("  "))).toBe(true);
    expect(stageSection([])).toEqual([]);
  });
});
