import { parseMapItemId, type DagDefinition, type DroverEvent } from "../../../contracts/index.ts";

export const STEP_STATES = [
  "pending",
  "running",
  "waiting-retry",
  "completed",
  "failed",
  "skipped",
  "cancelled",
] as const;
export type StepState = (typeof STEP_STATES)[number];

/** One step of a run as `GET /v1/runs/:id` shows it. */
export interface StepView {
  readonly id: string;
  readonly kind: string;
  readonly dependsOn: readonly string[];
  readonly state: StepState;
  /** Attempts recorded so far (failed ones and the completing one). */
  readonly attempts: number;
  /** The completing attempt's duration, as the runtime measured it. */
  readonly durationMs: number | null;
  readonly lastError: string | null;
  /** When a failed step is tried again (`waiting-retry`). */
  readonly retryAt: string | null;
  /** Why a `skipped` step did not run: `condition-false`, `dependency-skipped` or `superseded`, with the journal's detail. */
  readonly skip: { readonly reason: string; readonly detail: string } | null;
  /** The step's `when` result as journaled (null: no condition, or not evaluated yet). */
  readonly condition: boolean | null;
  /** Set on a fork's step that did not execute: the run whose journaled output it reuses (`exec.step-reused`). */
  readonly reusedFrom: string | null;
  /** A map step's items (docs/control-flow.md "Map"), from the journal; null for any other step. */
  readonly items: MapItemCounts | null;
}

/**
 * A map step's item counts: `total` from its `map-expanded` (null before it expanded), `completed`
 * and `failed` (no attempts left) from the items' events, `open` the rest — running, waiting for a
 * slot or for a retry (the journal records no item start, so these are not told apart); after the
 * run ended, the items that never settled.
 */
export interface MapItemCounts {
  readonly total: number | null;
  readonly completed: number;
  readonly failed: number;
  readonly open: number;
}

interface Seen {
  attempts: number;
  durationMs?: number;
  error?: string;
  retryAt?: string;
  exhausted?: boolean;
  completed?: boolean;
  skip?: { reason: string; detail: string };
  condition?: boolean;
  reusedFrom?: string;
}

/**
 * Each DAG step's state from the run's execution journals (every execution of the run, in stream
 * order: a resumed execution continues the same journal) and the run's status. A step is
 * `completed`, `skipped` or `failed` (no attempts left) when its journal says so; `waiting-retry` after a
 * failure with a `retryAt`; `running` while the execution is live and every dependency settled;
 * `cancelled` when the run ended without it; `pending` otherwise. Pure.
 */
export function stepStates(
  dag: DagDefinition,
  events: readonly { readonly event: DroverEvent }[],
  runStatus: string,
): StepView[] {
  const seen = new Map<string, Seen>();
  let live = false;
  const expanded = new Map<string, number>();
  const at = (id: string) => seen.get(id) ?? seen.set(id, { attempts: 0 }).get(id)!;
  for (const { event } of events) {
    switch (event.type) {
      case "exec.started":
      case "exec.resumed":
        live = true;
        break;
      case "exec.paused-for-recovery":
      case "exec.completed":
      case "exec.failed":
      case "exec.cancelled":
        live = false;
        break;
      case "exec.step-completed": {
        const s = at(event.data.stepId);
        Object.assign(s, { completed: true, durationMs: event.data.durationMs, retryAt: undefined });
        s.attempts = Math.max(s.attempts, event.data.attempt);
        break;
      }
      case "exec.step-failed": {
        const s = at(event.data.stepId);
        s.attempts = Math.max(s.attempts, event.data.attempt);
        s.error = event.data.error;
        s.retryAt = event.data.retryAt;
        s.exhausted = event.data.retryAt === undefined;
        break;
      }
      case "exec.step-skipped":
        at(event.data.stepId).skip = { reason: event.data.reason, detail: event.data.detail };
        break;
      case "exec.condition-evaluated":
        at(event.data.stepId).condition = event.data.result;
        break;
      case "exec.map-expanded":
        expanded.set(event.data.stepId, event.data.count);
        break;
      case "exec.step-reused":
        Object.assign(at(event.data.stepId), { completed: true, reusedFrom: event.data.fromRun });
        break;
      default:
        break;
    }
  }
  const ended =
    runStatus === "completed" || runStatus === "failed" || runStatus === "cancelled" || runStatus === "rejected";
  const done = (id: string) => seen.get(id)?.completed === true || seen.get(id)?.skip !== undefined;
  return dag.steps.map((step) => {
    const s = seen.get(step.id) ?? { attempts: 0 };
    const state: StepState = s.completed
      ? "completed"
      : s.skip
        ? "skipped"
        : s.exhausted
          ? "failed"
          : ended
            ? "cancelled"
            : s.retryAt !== undefined
              ? "waiting-retry"
              : live && step.dependsOn.every(done)
                ? "running"
                : "pending";
    return {
      id: step.id,
      kind: step.kind,
      dependsOn: step.dependsOn,
      state,
      attempts: s.attempts,
      durationMs: s.durationMs ?? null,
      lastError: s.error ?? null,
      retryAt: state === "waiting-retry" ? (s.retryAt ?? null) : null,
      skip: s.skip ?? null,
      condition: s.condition ?? null,
      reusedFrom: s.reusedFrom ?? null,
      items: step.map ? itemCounts(step.id, expanded.get(step.id) ?? null, seen) : null,
    };
  });
}

function itemCounts(stepId: string, total: number | null, seen: ReadonlyMap<string, Seen>): MapItemCounts {
  let completed = 0,
    failed = 0;
  for (const [id, s] of seen) {
    if (parseMapItemId(id, (m) => m === stepId) === undefined) continue;
    if (s.completed) completed++;
    else if (s.exhausted) failed++;
  }
  return { total, completed, failed, open: total === null ? 0 : Math.max(0, total - completed - failed) };
}
