import type { ErrorCode, Step, StepId } from "../../../contracts/index.ts";
import { retryAtAfterFailure } from "../../../aggregates/scheduler.ts";
import { jitterUnit } from "./attempt.ts";
import type { SecretResolver } from "./secrets.ts";
import type { ExecutorEnv } from "./executor-env.ts";
import type { Clock } from "../../../platform/clock.ts";
import type { OpenedExecution } from "./execution-open.ts";
import type { ExecutionState } from "../../../aggregates/execution.ts";
import type { MapHost } from "./map-steps.ts";

/** An execution's mutable progress in the runtime: what its journal proved, then what it wrote since. */
export interface LocalProgress {
  /** stepId → output digest */
  readonly completed: Map<string, string>;
  readonly completedIds: Set<string>;
  readonly failures: Map<string, { attempt: number; retryAt?: number }>;
  /** Why each step's latest attempt failed: the run's failure reason and a map's failed items name it. */
  readonly lastErrors: Map<string, { code?: ErrorCode; message: string }>;
  readonly timers: Map<string, { attempt: number; wakeAt: number }>;
  readonly skippedIds: Set<string>;
  readonly conditions: Map<string, boolean>;
  readonly maps: MapHost["maps"];
}

/** The progress a (resumed) execution starts from: its journal's folded state. */
export function progressFrom(prior: ExecutionState): LocalProgress {
  const p: LocalProgress = {
    completed: new Map(),
    completedIds: new Set(),
    failures: new Map(),
    lastErrors: new Map(),
    timers: new Map(prior.timers),
    skippedIds: new Set(prior.skipped.keys()),
    conditions: new Map(prior.conditions),
    maps: new Map(prior.maps),
  };
  for (const [id, c] of prior.completed) {
    p.completed.set(id, c.outputDigest);
    p.completedIds.add(id);
  }
  for (const [id, f] of prior.failures) {
    p.failures.set(id, f.retryAt === undefined ? { attempt: f.attempt } : { attempt: f.attempt, retryAt: f.retryAt });
    if (f.error !== undefined) p.lastErrors.set(id, { ...(f.code ? { code: f.code } : {}), message: f.error });
  }
  return p;
}

/**
 * A sleep step's durable timer: the journal's wake-up for this attempt if one was recorded (a
 * resumed execution sleeps only what is left), else a new one, made durable before the wait.
 */
export async function durableTimer(
  opened: OpenedExecution,
  timers: LocalProgress["timers"],
  clock: Clock,
  stepId: StepId,
  attempt: number,
  durationMs: number,
): Promise<number> {
  const known = timers.get(stepId);
  if (known?.attempt === attempt) return known.wakeAt;
  const wakeAt = clock.now().getTime() + durationMs;
  await opened.exec.append(
    opened.emit("exec.timer-started", { stepId, attempt, durationMs, wakeAt: new Date(wakeAt).toISOString() }),
  );
  timers.set(stepId, { attempt, wakeAt });
  return wakeAt;
}

/** Journals a failed attempt (`exec.step-failed`, with its retry time when one is left) and folds it into `p`. */
export async function stepFailed(
  opened: OpenedExecution,
  p: LocalProgress,
  step: Step,
  attempt: number,
  outcome: { readonly message: string; readonly code?: ErrorCode; readonly retryable: boolean },
  nowMs: number,
  secrets: SecretResolver | undefined,
): Promise<void> {
  const unit = jitterUnit(opened.executionId, step.id, attempt);
  const retryAt = outcome.retryable ? retryAtAfterFailure(step, attempt, nowMs, unit) : undefined;
  const message = (secrets?.redact(outcome.message) ?? outcome.message).slice(0, 2000);
  await opened.exec.append(
    opened.emit("exec.step-failed", {
      stepId: step.id,
      attempt,
      error: message,
      ...(outcome.code ? { code: outcome.code } : {}),
      ...(retryAt === undefined ? {} : { retryAt: new Date(retryAt).toISOString() }),
    }),
  );
  p.failures.set(step.id, retryAt === undefined ? { attempt } : { attempt, retryAt });
  p.lastErrors.set(step.id, { ...(outcome.code ? { code: outcome.code } : {}), message });
}

/** Logs an execution's first step started here (how long after its open, after how many journaled steps); true. */
export function firstStepStarted(
  env: Pick<ExecutorEnv, "log" | "clock">,
  opened: OpenedExecution,
  s: { readonly stepId: string; readonly attempt: number },
  startedAt: number,
): true {
  env.log({
    event: "first-step-started",
    executionId: opened.executionId,
    stepId: s.stepId,
    attempt: s.attempt,
    sinceOpenMs: env.clock.now().getTime() - startedAt,
    resumedAfter: opened.prior.completed.size,
  });
  return true;
}
