import type { DroverEvent } from "../../../contracts/index.ts";

export interface ExecSummary {
  readonly lastSeq: number;
  readonly epoch: number;
  readonly completedSteps: number;
  readonly terminal: boolean;
}

/** What a recovery transition needs of an execution journal: where it ends, its owner epoch, its progress (pure). */
export function summarizeExecution(history: readonly { seq: number; event: DroverEvent }[]): ExecSummary {
  let epoch = 0,
    terminal = false;
  const steps = new Set<string>();
  for (const { event: e } of history) {
    if (e.type === "exec.started") epoch = Math.max(epoch, e.data.epoch);
    else if (e.type === "exec.paused-for-recovery") epoch = Math.max(epoch, e.data.newEpoch);
    else if (e.type === "exec.resumed") epoch = Math.max(epoch, e.data.epoch);
    else if (e.type === "exec.step-completed") steps.add(e.data.stepId);
    else if (e.type === "exec.completed" || e.type === "exec.failed" || e.type === "exec.cancelled") terminal = true;
  }
  return { lastSeq: history.at(-1)?.seq ?? 0, epoch, completedSteps: steps.size, terminal };
}
