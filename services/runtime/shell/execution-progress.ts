import type { ErrorCode, StepId } from "../../../contracts/index.ts";
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
