import { isTerminal } from "../../../aggregates/run.ts";
import type { ForensicsRecord, TrackedRun } from "./state.ts";

const COMPLETED = "forensics.execution-recovery-completed";
const openRunOf = (f: ForensicsRecord): string | undefined =>
  f.item && !f.types.has(COMPLETED) ? `${f.tenantId}/${f.item.sharedRunId}` : undefined;

/**
 * Recovery's bound on terminal runs (`DROVER_MAX_TERMINAL_RUNS`): beyond it the runs that ended
 * first leave memory, except a run an open forensics record names (its timeline still reads it).
 * Recovery acts on a run only when it is placed on a failed runtime (a terminal run never is; only
 * admission places runs, and it reads a dropped run back from the log before deciding anything) or
 * when an open forensics record names it (kept): dropping the others changes no decision.
 */
export class RunBound {
  max?: number;
  dropped = 0;
  private readonly terminal = new Map<string, TrackedRun>();
  private readonly openRuns = new Map<string, number>();

  constructor(private readonly runs: Map<string, TrackedRun>) {}

  /** After a run event: `wasTerminal` is whether it was terminal before. */
  runChanged(key: string, r: TrackedRun, wasTerminal: boolean): void {
    if (!wasTerminal && isTerminal(r.state.status)) {
      this.terminal.set(key, r);
      this.evict();
    }
  }

  /** Around a forensics record's change: call with the record before (`undefined` if new) and after. */
  forensicsChanged(before: string | undefined, after: ForensicsRecord): void {
    const now = openRunOf(after);
    if (before === now) return;
    if (before) {
      const n = (this.openRuns.get(before) ?? 1) - 1;
      if (n > 0) this.openRuns.set(before, n);
      else this.openRuns.delete(before);
    }
    if (now) this.openRuns.set(now, (this.openRuns.get(now) ?? 0) + 1);
    else this.evict();
  }

  openRunOf = openRunOf;

  /** Rebuilds the derived sets from the runs and records (after a restore). */
  rebuild(forensics: Iterable<ForensicsRecord>, dropped: number): void {
    this.terminal.clear();
    this.openRuns.clear();
    this.dropped = dropped;
    for (const f of forensics) this.forensicsChanged(undefined, f);
    for (const [key, r] of this.runs) if (isTerminal(r.state.status)) this.terminal.set(key, r);
    this.evict();
  }

  private evict(): void {
    if (this.max === undefined) return;
    for (const key of this.terminal.keys()) {
      if (this.terminal.size <= this.max) break;
      if (this.openRuns.has(key)) continue;
      this.terminal.delete(key);
      this.runs.delete(key);
      this.dropped++;
    }
  }
}
