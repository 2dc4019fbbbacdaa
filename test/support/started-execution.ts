import { expect } from "vitest";
import { LocalRunId, SharedRunId } from "../../contracts/index.ts";
import { executionIdFor } from "../../services/runtime/index.ts";

/**
 * The ExecutionId a DispatchRun's run gets when it starts. The answer names it only when the run started
 * at once: a run accepted while the runtime's one slot is still held answers `queued` without one. A test
 * that waits for the previous run's end in its journal hits that window: `exec.failed`/`exec.completed`
 * is one append before the slot is given back (the run's own `run.failed`/`run.completed` follows,
 * execution-end.ts). The id is a function of the two run ids (execution-open.ts), so a test derives it,
 * and checks that an answer that does name one names the same.
 */
export function startedExecutionId(answer: unknown, sharedRunId: string, localRunId: string): string {
  const executionId = executionIdFor(SharedRunId.parse(sharedRunId), LocalRunId.parse(localRunId));
  const named = (answer as { run?: { executionId?: string } } | undefined)?.run?.executionId;
  if (named !== undefined) expect(named).toBe(executionId);
  return executionId;
}
