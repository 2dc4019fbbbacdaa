import { describe, expect, it } from "vitest";
import { proofLine, type ProofReport } from "../../proof/run-proof.ts";
import { RECOVERY_STAGES, stageTable, type StageTrace } from "../../proof/recovery-stages.ts";
import { DEFAULT_PROOF } from "../../proof/scenario-config.ts";
import { summary } from "./proof.ts";

// Pure: a report as runProof returns it, formatted; proves no transport and runs no proof.
const q = (p50: number) => ({ p50, p99: p50 * 2 });
const trace = (runtimeInstanceId: string, warm: boolean, k: number): StageTrace => ({
  runtimeInstanceId,
  replacement: `${runtimeInstanceId}-r`,
  warm,
  at: Object.fromEntries(RECOVERY_STAGES.map((s, i) => [s, (i + 1) * k])) as StageTrace["at"],
});
const kill = (runtimeInstanceId: string) => ({
  tenantId: "t-a",
  runtimeInstanceId,
  hostIncarnation: "pid:1:1",
  executionId: "ex-1",
  sharedRunId: "run-1",
  completedAtKill: 25,
  killedAtMs: 0,
  stepDurableAtMs: 0,
  stepSeenAtMs: 0,
});
const report = (stages: readonly StageTrace[]): ProofReport => ({
  options: { ...DEFAULT_PROOF, parallel: 1 },
  runs: 9,
  recovered: 6,
  sendsFailed: 0,
  notPlaced: 0,
  kills: stages.map((s) => kill(s.runtimeInstanceId)),
  assertions: [{ name: "duplicates", ok: true, violations: 0, detail: "none" }],
  latencies: { suspected: q(100), fenced: q(200), resumed: q(900), gateSeen: q(5), gateSignal: q(6) },
  stages,
  startup: { hostReady: q(300), route: q(Number.NaN), published: q(400), publishedCold: q(500), publishedWarm: q(350) },
  warmStarts: { claimed: 1, of: 2 },
  chaos: [],
  warmPoolReadyMs: 0,
  durationMs: 30_000,
  phasesMs: { runs: 12_000, log: 3_000, readModels: 15_000 },
  pass: true,
  logDir: "",
});

describe("drover proof's summary (pure: proves no transport)", () => {
  it("prints each kill's recovery stages, the bench's table, after the other summary lines and before the proof line", () => {
    const stages = [trace("rt-t-a-000001", true, 10), trace("rt-t-b-000002", false, 20)];
    const lines = summary(report(stages)).split("\n");
    const title = lines.findIndex((l) => l.startsWith("  stages of each kill's recovery (ms after each kill;"));
    expect(title).toBeGreaterThan(lines.findIndex((l) => l.startsWith("  duration ")));
    // The same table as bench/recovery.bench.ts's, indented as a summary line: header, one row per kill, p50, p99.
    const table = stageTable(stages).split("\n");
    expect(lines.slice(title + 1, title + 1 + table.length)).toEqual(table.map((l) => `  ${l}`));
    expect(lines[title + 2]).toMatch(/^ {2}000001w +10 +20 /);
    expect(lines[title + table.length]).toMatch(/^ {2}p99 /);
    // The proof line stays the last line (what a reader of `drover proof | tail -1` expects).
    expect(lines.at(-1)).toBe(proofLine(report(stages)));
    expect(lines.at(-1)).toMatch(/result=PASS$/);
  });

  it("prints no stage table for a proof without kills", () => {
    expect(summary(report([]))).not.toMatch(/stages of each kill/);
  });
});
