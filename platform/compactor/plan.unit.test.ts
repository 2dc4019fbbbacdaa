import { describe, expect, it } from "vitest";
import { DEFAULT_LAYOUT } from "../../streams/index.ts";
import { exampleEvent } from "../../test/support/example-events.ts";
import { judge, runAggregates } from "./plan.ts";

const base = { endedAtMs: 1_000, nowMs: 101_000, retentionMs: 100_000, lastSeq: 9, projectedThrough: 9 };

describe("compaction rules (pure: proves no transport)", () => {
  it("removes only a terminal run ended at least the retention window ago that the read models have projected", () => {
    expect(judge({ ...base, lastType: "run.completed" })).toBeUndefined();
    expect(judge({ ...base, lastType: "run.rejected" })).toBeUndefined();
    expect(judge({ ...base, lastType: "run.started" })?.skip).toBe("not-terminal");
    expect(judge({ ...base, lastType: "run.requeued-for-resume" })?.skip).toBe("not-terminal");
    expect(judge({ ...base, lastType: "run.failed", nowMs: 100_999 })?.skip).toBe("within-retention");
    expect(judge({ ...base, lastType: "run.cancelled", projectedThrough: 8 })?.skip).toBe("not-projected");
  });

  it("takes a run's executions and scale-out requests with it, and the run aggregate last", () => {
    const started = exampleEvent("run.started");
    const scale = exampleEvent("run.scale-out-requested");
    const filters = runAggregates(DEFAULT_LAYOUT, "acme", "run-1", [started, scale, started]);
    expect(filters).toEqual([
      `drover.exec.acme.${started.data.executionId}.>`,
      `drover.scaleout.acme.${scale.data.requestId}.>`,
      "drover.run.acme.run-1.>",
    ]);
  });
});
