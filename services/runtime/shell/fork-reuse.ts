import { evolveExecution, foldExecution, type ExecutionState } from "../../../aggregates/execution.ts";
import type { DataOf, DroverEvent, EventType, ForkOrigin, TenantId } from "../../../contracts/index.ts";
import { execRef } from "../../../streams/subjects.ts";
import type { EventStore } from "../../../streams/types.ts";
import type { AggregateJournal } from "./journal.ts";

type Emit = <T extends EventType>(type: T, data: DataOf<T>) => DroverEvent;

/** The journal after the reuses, or why the fork cannot reuse what it was promised. */
export type ReuseOutcome =
  | { readonly ok: true; readonly state: ExecutionState }
  | { readonly ok: false; readonly state: ExecutionState; readonly detail: string };

/**
 * Writes a fork's `exec.step-reused` events: one per reused step the journal does not hold yet (a
 * resumed fork writes only the ones its first owner did not), each a conditional append through
 * the execution's journal, before any step runs. The outputs are read from the original's journal
 * (the same tenant's subjects) and must carry the digests the fork was planned with: the inline
 * output is copied as journaled there, a stored one by the same object-store reference (no copy).
 * Returns the folded state, or a problem (an output missing or changed) the caller ends the
 * execution with; nothing is reused then beyond what was already written.
 */
export async function writeReused(
  store: EventStore,
  tenantId: TenantId,
  fork: ForkOrigin | undefined,
  exec: AggregateJournal,
  emit: Emit,
  prior: ExecutionState,
): Promise<ReuseOutcome> {
  const todo = (fork?.reuse ?? []).filter((r) => !prior.completed.has(r.stepId));
  if (!fork || todo.length === 0) return { ok: true, state: prior };
  const original =
    fork.executionId === undefined
      ? foldExecution([])
      : foldExecution((await store.read(execRef(tenantId, fork.executionId))).events);
  const problems = todo.flatMap((r) => {
    const c = original.completed.get(r.stepId);
    if (!c) return [`${r.stepId} has no completion in ${fork.executionId ?? "the original"}`];
    return c.outputDigest === r.outputDigest ? [] : [`${r.stepId} has digest ${c.outputDigest}, not ${r.outputDigest}`];
  });
  if (problems.length > 0)
    return {
      ok: false,
      state: prior,
      detail: `fork of run ${fork.sharedRunId}: ${problems.join("; ")}`.slice(0, 2000),
    };
  let state = prior;
  for (const r of todo) {
    const c = original.completed.get(r.stepId)!;
    const event = emit("exec.step-reused", {
      stepId: r.stepId,
      fromRun: fork.sharedRunId,
      fromExecutionId: fork.executionId!,
      ...(c.outputRef ? { outputRef: c.outputRef } : { output: c.output as DataOf<"exec.step-reused">["output"] }),
      outputDigest: c.outputDigest,
    });
    const seq = await exec.append(event);
    state = evolveExecution(state, { seq, event });
  }
  return { ok: true, state };
}
