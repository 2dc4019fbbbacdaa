import type { DataOf, DroverEvent } from "../contracts/index.ts";
import { assertNever } from "../contracts/assert-never.ts";

export type ExecEvent = Extract<DroverEvent, { type: `exec.${string}` }>;
export const isExecEvent = (e: DroverEvent): e is ExecEvent => e.type.startsWith("exec.");

/** An event with its stream sequence (structurally a streams `StoredEvent`; domain code does not import streams/). */
export interface SequencedEvent {
  readonly seq: number;
  readonly event: DroverEvent;
}

export interface CompletedStep {
  readonly attempt: number;
  /** The inline output; undefined when `outputRef` names it in the object store. */
  readonly output: unknown;
  readonly outputRef?: DataOf<"exec.step-completed">["outputRef"];
  readonly outputDigest: string;
  readonly seq: number;
  /** Set when the step was not executed here: a fork reused the original run's output (`exec.step-reused`). */
  readonly reusedFrom?: { readonly sharedRunId: string; readonly executionId: string };
}

/** An execution's state as its journal proves it: what a resuming runtime continues from. */
export interface ExecutionState {
  readonly started?: DataOf<"exec.started">;
  /** When `exec.started` was written (its envelope's occurredAt): what a run deadline counts from. */
  readonly startedAt?: string;
  /** The current owner epoch: the latest of started, paused-for-recovery (newEpoch) and resumed. */
  readonly epoch: number;
  /** Set while the latest `paused-for-recovery` has not been followed by a `resumed` at its epoch. */
  readonly pendingRecovery?: DataOf<"exec.paused-for-recovery">;
  readonly lastResumed?: DataOf<"exec.resumed">;
  readonly completed: ReadonlyMap<string, CompletedStep>;
  /** Latest failure per step not (yet) completed; retryAt in epoch ms; error as journaled. */
  readonly failures: ReadonlyMap<
    string,
    {
      readonly attempt: number;
      readonly retryAt?: number;
      readonly error?: string;
      readonly code?: DataOf<"exec.step-failed">["code"];
    }
  >;
  /** Durable timers of `sleep` steps not (yet) completed: wakeAt in epoch ms, per step and attempt. */
  readonly timers: ReadonlyMap<string, { readonly attempt: number; readonly wakeAt: number }>;
  /** Recorded `when` results per step (`condition-evaluated`). */
  readonly conditions: ReadonlyMap<string, boolean>;
  /** Skipped steps, with why and at which sequence. */
  readonly skipped: ReadonlyMap<
    string,
    { readonly reason: DataOf<"exec.step-skipped">["reason"]; readonly seq: number }
  >;
  /** Wait steps: the deadline `wait-opened` journaled and, once decided, their `wait-resolved`. */
  readonly waits: ReadonlyMap<string, { readonly timeoutAt: number; readonly resolved?: DataOf<"exec.wait-resolved"> }>;
  /** Journaled map expansions per map step (`map-expanded`), with their sequence. */
  readonly maps: ReadonlyMap<string, DataOf<"exec.map-expanded"> & { readonly seq: number }>;
  /** Child runs the run steps submitted (`child-run-submitted`), the latest attempt's per step. */
  readonly children: ReadonlyMap<
    string,
    { readonly attempt: number; readonly childRunId: string; readonly seq: number }
  >;
  readonly terminal?: "completed" | "failed" | "cancelled";
  /** Sequence of the last event folded: the expectation of the next append. */
  readonly lastSeq: number;
  /** Invariant breaks seen while folding (e.g. a second step-completed for a step); empty for a sound journal. */
  readonly violations: readonly string[];
  /** Sequences of runtime-written events stepped over: their writer is not the runtime the execution is placed on. */
  readonly steppedOver: readonly number[];
}

export const initialExecutionState = (): ExecutionState => ({
  epoch: 0,
  completed: new Map(),
  failures: new Map(),
  timers: new Map(),
  conditions: new Map(),
  skipped: new Map(),
  maps: new Map(),
  children: new Map(),
  waits: new Map(),
  lastSeq: 0,
  violations: [],
  steppedOver: [],
});

/**
 * The runtime an execution is placed on: the one `exec.started` names, then the one each
 * `exec.resumed` names (the replacement a recovery placed it on); none while a recovery is pending
 * (after `paused-for-recovery`, before the replacement's `resumed`).
 */
export const placedRuntimeOf = (s: ExecutionState): string | undefined =>
  s.pendingRecovery ? undefined : (s.lastResumed?.runtimeInstanceId ?? s.started?.runtimeInstanceId);

/**
 * An exec event written by a runtime counts only from the runtime the execution is placed on.
 * NATS subjects cannot tell runtimes apart (a runtime may write the exec subjects of every
 * execution of its tenants), so another runtime's write is stepped over: `exec.started` and
 * `exec.resumed` count only from the runtime they place the execution on (a resume only while a
 * recovery is pending), every other event only from the placed runtime. The writer is what the
 * event declares: this stops a confused or stale runtime, not a forger (docs/nats-identities.md).
 */
export function fromUnplacedRuntime(s: ExecutionState, e: ExecEvent): boolean {
  if (e.writer.service !== "runtime") return false;
  const writer = e.writer.runtimeInstanceId;
  if (e.type === "exec.started") return writer !== e.data.runtimeInstanceId;
  if (e.type === "exec.resumed") return writer !== e.data.runtimeInstanceId || !s.pendingRecovery;
  return writer !== placedRuntimeOf(s);
}

/**
 * Folds one execution event into the state. Pure and total: events of other aggregates are ignored,
 * invariant breaks are recorded in `violations` (never thrown) so replay validation can report them
 * with their sequence. A step's recorded output is kept from its first completion: a duplicate never
 * overwrites what downstream steps already consumed.
 */
export function evolveExecution(state: ExecutionState, { seq, event }: SequencedEvent): ExecutionState {
  const next = { ...state, lastSeq: Math.max(state.lastSeq, seq) };
  // Other aggregates' events can share a replay; they do not change an execution.
  if (!isExecEvent(event)) return next;
  if (fromUnplacedRuntime(state, event)) return { ...next, steppedOver: [...state.steppedOver, seq] };
  switch (event.type) {
    case "exec.started":
      if (state.started) return { ...next, violations: [...state.violations, `second exec.started at seq ${seq}`] };
      return {
        ...next,
        started: event.data,
        startedAt: event.occurredAt,
        epoch: Math.max(state.epoch, event.data.epoch),
      };
    case "exec.step-completed": {
      const { stepId, attempt, output, outputDigest, outputRef } = event.data;
      if (state.skipped.has(stepId))
        return {
          ...next,
          violations: [...state.violations, `step-completed for skipped step ${stepId} at seq ${seq}`],
        };
      if (state.completed.has(stepId))
        return { ...next, violations: [...state.violations, `duplicate step-completed for ${stepId} at seq ${seq}`] };
      const completed = new Map(state.completed).set(stepId, {
        attempt,
        output,
        outputDigest,
        seq,
        ...(outputRef ? { outputRef } : {}),
      });
      const failures = new Map(state.failures);
      failures.delete(stepId);
      const timers = new Map(state.timers);
      timers.delete(stepId);
      return { ...next, completed, failures, timers };
    }
    case "exec.step-reused": {
      const { stepId, output, outputDigest, outputRef, fromRun, fromExecutionId } = event.data;
      if (state.completed.has(stepId) || state.skipped.has(stepId))
        return { ...next, violations: [...state.violations, `step-reused for settled step ${stepId} at seq ${seq}`] };
      const completed = new Map(state.completed).set(stepId, {
        attempt: 0,
        output,
        outputDigest,
        seq,
        reusedFrom: { sharedRunId: fromRun, executionId: fromExecutionId },
        ...(outputRef ? { outputRef } : {}),
      });
      // A step cache hit may come after failed attempts of the step: it settles them like a completion.
      const failures = new Map(state.failures);
      failures.delete(stepId);
      return { ...next, completed, failures };
    }
    case "exec.step-failed": {
      const retryAt = event.data.retryAt === undefined ? undefined : Date.parse(event.data.retryAt);
      const { attempt, error, code } = event.data;
      const failure = { attempt, error, ...(code ? { code } : {}), ...(retryAt === undefined ? {} : { retryAt }) };
      return { ...next, failures: new Map(state.failures).set(event.data.stepId, failure) };
    }
    case "exec.timer-started":
      // The first timer of an attempt is the one it keeps: a duplicate never moves the wake-up.
      if (state.timers.get(event.data.stepId)?.attempt === event.data.attempt) return next;
      return {
        ...next,
        timers: new Map(state.timers).set(event.data.stepId, {
          attempt: event.data.attempt,
          wakeAt: Date.parse(event.data.wakeAt),
        }),
      };
    case "exec.condition-evaluated": {
      const { stepId, result } = event.data;
      if (state.conditions.has(stepId))
        return { ...next, violations: [...state.violations, `second condition-evaluated for ${stepId} at seq ${seq}`] };
      return { ...next, conditions: new Map(state.conditions).set(stepId, result) };
    }
    case "exec.step-skipped": {
      const { stepId, reason } = event.data;
      if (state.completed.has(stepId) || state.skipped.has(stepId))
        return { ...next, violations: [...state.violations, `step-skipped for settled step ${stepId} at seq ${seq}`] };
      return { ...next, skipped: new Map(state.skipped).set(stepId, { reason, seq }) };
    }
    case "exec.map-expanded": {
      const { stepId } = event.data;
      if (state.maps.has(stepId))
        return { ...next, violations: [...state.violations, `second map-expanded for ${stepId} at seq ${seq}`] };
      return { ...next, maps: new Map(state.maps).set(stepId, { ...event.data, seq }) };
    }
    case "exec.child-run-submitted": {
      const { stepId, attempt, childRunId } = event.data;
      if ((state.children.get(stepId)?.attempt ?? 0) >= attempt)
        return { ...next, violations: [...state.violations, `second child-run-submitted for ${stepId} at seq ${seq}`] };
      return { ...next, children: new Map(state.children).set(stepId, { attempt, childRunId, seq }) };
    }
    case "exec.wait-opened":
    case "exec.wait-resolved": {
      const r = foldWait(state.waits, event, seq);
      return { ...next, waits: r.waits, ...(r.violation ? { violations: [...state.violations, r.violation] } : {}) };
    }
    case "exec.paused-for-recovery":
      return { ...next, epoch: Math.max(state.epoch, event.data.newEpoch), pendingRecovery: event.data };
    case "exec.resumed": {
      const { pendingRecovery: _cleared, ...rest } = next;
      if (state.pendingRecovery?.newEpoch !== event.data.epoch) {
        return {
          ...rest,
          lastResumed: event.data,
          violations: [
            ...state.violations,
            `resumed at epoch ${event.data.epoch} without a matching paused-for-recovery at seq ${seq}`,
          ],
        };
      }
      return { ...rest, lastResumed: event.data, epoch: Math.max(state.epoch, event.data.epoch) };
    }
    case "exec.completed":
      return { ...next, terminal: "completed" };
    case "exec.failed":
      return { ...next, terminal: "failed" };
    case "exec.cancelled":
      return { ...next, terminal: "cancelled" };
    default:
      return assertNever(event);
  }
}

/** A wait's opening (the first counts) or resolution (once, after its opening). */
function foldWait(
  waits: ExecutionState["waits"],
  e: Extract<ExecEvent, { type: "exec.wait-opened" | "exec.wait-resolved" }>,
  seq: number,
): { waits: ExecutionState["waits"]; violation?: string } {
  const w = waits.get(e.data.stepId);
  if (e.type === "exec.wait-opened")
    return w
      ? { waits, violation: `second wait-opened for ${e.data.stepId} at seq ${seq}` }
      : { waits: new Map(waits).set(e.data.stepId, { timeoutAt: Date.parse(e.data.timeoutAt) }) };
  if (!w || w.resolved) return { waits, violation: `wait-resolved for ${e.data.stepId} not open at seq ${seq}` };
  return { waits: new Map(waits).set(e.data.stepId, { ...w, resolved: e.data }) };
}

/** Folds a journal (in stream order) from the initial state. */
export function foldExecution(events: readonly SequencedEvent[]): ExecutionState {
  return events.reduce(evolveExecution, initialExecutionState());
}
