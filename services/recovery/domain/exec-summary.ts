import { foldExecution } from "../../../aggregates/execution.ts";
import type { DroverEvent } from "../../../contracts/index.ts";

export interface ExecSummary {
  readonly lastSeq: number;
  readonly epoch: number;
  readonly completedSteps: number;
  readonly terminal: boolean;
}

/**
 * What a recovery transition needs of an execution journal: where it ends, its owner epoch, its
 * progress (pure). Through the execution fold, so a runtime's write for an execution placed on
 * another runtime counts for nothing (aggregates/execution.ts `fromUnplacedRuntime`).
 */
export function summarizeExecution(history: readonly { seq: number; event: DroverEvent }[]): ExecSummary {
  const s = foldExecution(history);
  return {
    lastSeq: history.at(-1)?.seq ?? 0,
    epoch: s.epoch,
    completedSteps: s.completed.size,
    terminal: s.terminal !== undefined,
  };
}
