import type { DagDefinition, Step, StepId } from "../contracts/index.ts";
import { readiness, type StepSkip } from "./readiness.ts";
import { mapItems, type MapExpansion, type MapSettle } from "./map.ts";

export type { StepSkip } from "./readiness.ts";
export type { MapSettle } from "./map.ts";

/** What the journal (plus this process's in-flight set) says about each step. */
export interface StepProgress {
  /** Steps with a durable `step-completed`. */
  readonly completed: ReadonlySet<string>;
  /** Latest durable `step-failed` per step: its attempt and, when a retry is allowed, the earliest time (epoch ms) for it. */
  readonly failures: ReadonlyMap<string, { readonly attempt: number; readonly retryAt?: number }>;
  /** Steps this process is executing right now (none after a crash: recovery starts with an empty set). */
  readonly running: ReadonlySet<string>;
  /** Steps with a durable `step-skipped` (absent: none). */
  readonly skipped?: ReadonlySet<string>;
  /** Durable `condition-evaluated` results (absent: none). */
  readonly conditions?: ReadonlyMap<string, boolean>;
  /** Durable `map-expanded` per map step (absent: none). Items are ids `<map>--<index>` in the other fields. */
  readonly maps?: ReadonlyMap<string, MapExpansion>;
}

export interface StepStart {
  readonly stepId: StepId;
  readonly attempt: number;
}

/** The scheduler's decision for one execution at one instant. */
export type ScheduleDecision =
  | { readonly kind: "completed" }
  | { readonly kind: "failed"; readonly stepId: StepId; readonly attempt: number }
  | {
      readonly kind: "continue";
      readonly start: readonly StepStart[];
      readonly wakeAt?: number;
      /** Steps whose `when` is to be evaluated (and journaled) now; present only when there are some. */
      readonly evaluate?: readonly StepId[];
      /** Steps to journal as skipped now; present only when there are some. */
      readonly skip?: readonly StepSkip[];
      /** Map steps to expand (and journal `map-expanded`) now; present only when there are some. */
      readonly expand?: readonly StepId[];
      /** Map steps whose items settled (or too many failed): journal their outcome now. */
      readonly settle?: readonly MapSettle[];
    };

/**
 * Topological level of every step (0 for roots, else 1 + the deepest dependency). Ready steps are
 * ordered by (level, id): deterministic for a given DAG, so a replay of the journal re-derives the
 * same choices. The DAG must be acyclic (DagDefinition guarantees it).
 */
export function topologicalLevels(steps: readonly Pick<Step, "id" | "dependsOn">[]): ReadonlyMap<string, number> {
  const deps = new Map(steps.map((s) => [s.id as string, s.dependsOn as readonly string[]]));
  const level = new Map<string, number>();
  const visit = (id: string): number => {
    const known = level.get(id);
    if (known !== undefined) return known;
    // Seed to guard against a cycle turning into unbounded recursion; a valid DAG never reads it.
    level.set(id, 0);
    const l = Math.max(-1, ...(deps.get(id) ?? []).map(visit)) + 1;
    level.set(id, l);
    return l;
  };
  for (const s of steps) visit(s.id);
  return level;
}

/**
 * Decides which steps to start now. Pure: the same DAG, progress, `now` and cap always give the same
 * answer.
 *
 * - every step completed or skipped → `completed`;
 * - a step whose latest failure has no retry left (attempt ≥ retry.maxAttempts) → `failed`;
 * - steps whose dependencies settled are skipped or have their condition evaluated as
 *   `readiness` says (`skip`, `evaluate`: neither takes a worker); an open wait that every unsettled
 *   dependent (trigger `any`, another dependency completed) can go without is skipped `superseded`;
 * - otherwise ready steps (not settled, not running, readiness `ready`, retry time reached) in (topological level, id) order, as many as `maxParallel` minus the running steps
 *   that hold a worker; a `sleep` step holds none (it waits on its durable timer), so it starts
 *   whenever it is ready and never counts against `maxParallel`;
 *   the attempt number continues from the journal, so a crash never consumes retry budget;
 * - `wakeAt` is the earliest future retry time of a step that is otherwise ready;
 * - a ready map step is expanded first (`expand`); once expanded its items start in index order,
 *   at most `map.maxConcurrency` at once (and within `maxParallel`), and it settles (`settle`)
 *   when its items have (see `mapItems`). A map step itself never starts.
 */
export function scheduleSteps(
  dag: Pick<DagDefinition, "steps">,
  progress: StepProgress,
  now: number,
  maxParallel: number,
): ScheduleDecision {
  const plan = planOf(dag.steps);
  const skipped = progress.skipped ?? new Set<string>();
  const conditions = progress.conditions ?? new Map<string, boolean>();
  const settled = (id: string) => progress.completed.has(id) || skipped.has(id);
  if (progress.completed.size + skipped.size >= plan.order.length && plan.order.every((s) => settled(s.id)))
    return { kind: "completed" };
  let exhausted: { stepId: StepId; attempt: number } | undefined;
  for (const [stepId, f] of progress.failures) {
    const s = plan.byId.get(stepId);
    if (
      s &&
      !progress.completed.has(stepId) &&
      // No retry time recorded means no retry left: the budget is spent or the failure was non-retryable.
      (f.attempt >= s.retry.maxAttempts || f.retryAt === undefined) &&
      (!exhausted || stepId < exhausted.stepId)
    )
      exhausted = { stepId: s.id, attempt: f.attempt };
  }
  if (exhausted) return { kind: "failed", ...exhausted };
  let holding = 0;
  for (const id of progress.running) if (takesWorker(plan.byId.get(id))) holding++;
  const room = Math.max(0, maxParallel - holding);
  const ready: StepStart[] = [];
  let withWorker = 0;
  let wakeAt: number | undefined;
  const evaluate: StepId[] = [];
  const skip: StepSkip[] = [];
  const expand: StepId[] = [];
  const settle: MapSettle[] = [];
  const supersede: Supersede[] = [];
  // plan.order is already (level, id)-sorted, so filtering keeps the deterministic order.
  for (const s of plan.order) {
    if (settled(s.id) || progress.running.has(s.id)) continue;
    const r = readiness(s, progress.completed, skipped, conditions, plan.isWait);
    if (r.kind === "supersede") supersede.push({ by: s.id, waits: r.waits, on: r.on });
    if (r.kind === "wait" || r.kind === "supersede") continue;
    if (r.kind === "evaluate") evaluate.push(s.id);
    if (r.kind === "skip") skip.push({ stepId: r.stepId, reason: r.reason, detail: r.detail });
    if (r.kind !== "ready") continue;
    if (s.map) {
      const m = progress.maps?.get(s.id);
      if (!m) {
        expand.push(s.id);
        continue;
      }
      const items = mapItems(s, m, progress, now);
      if (items.settle) settle.push(items.settle);
      if (items.wakeAt !== undefined) wakeAt = wakeAt === undefined ? items.wakeAt : Math.min(wakeAt, items.wakeAt);
      for (const start of items.start) {
        if (takesWorker(s)) {
          if (withWorker >= room) break;
          withWorker++;
        }
        ready.push(start);
      }
      continue;
    }
    const f = progress.failures.get(s.id);
    if (f?.retryAt !== undefined && f.retryAt > now) {
      wakeAt = wakeAt === undefined ? f.retryAt : Math.min(wakeAt, f.retryAt);
      continue;
    }
    const start = { stepId: s.id, attempt: (f?.attempt ?? 0) + 1 };
    if (!takesWorker(s)) ready.push(start);
    else if (withWorker < room) {
      ready.push(start);
      withWorker++;
    }
  }
  const dropped = superseded(plan, supersede, settled);
  skip.push(...dropped);
  return {
    kind: "continue",
    start: dropped.length > 0 ? ready.filter((x) => !dropped.some((d) => d.stepId === x.stepId)) : ready,
    ...(wakeAt === undefined ? {} : { wakeAt }),
    ...(evaluate.length > 0 ? { evaluate } : {}),
    ...(skip.length > 0 ? { skip } : {}),
    ...(expand.length > 0 ? { expand } : {}),
    ...(settle.length > 0 ? { settle } : {}),
  };
}

/** True for the kinds that run on a worker: a `sleep` step only waits for its durable timer, a `wait` step for its signal, a `run` step for its child run. */
export const takesWorker = (step: Pick<Step, "kind"> | undefined): boolean =>
  step?.kind !== "sleep" && step?.kind !== "run" && step?.kind !== "wait";

interface Plan {
  readonly order: readonly Step[];
  readonly byId: ReadonlyMap<string, Step>;
  readonly dependents: ReadonlyMap<string, readonly string[]>;
  readonly isWait: (stepId: string) => boolean;
}

interface Supersede {
  readonly by: string;
  readonly waits: readonly string[];
  readonly on: string;
}

/**
 * The open waits to skip as `superseded` (docs/control-flow.md "Waits"): those some trigger-`any`
 * step asked to supersede and that no unsettled dependent still needs (every unsettled dependent
 * asked too). A wait another step still waits for stays open. In plan order: deterministic.
 */
function superseded(plan: Plan, asks: readonly Supersede[], settled: (id: string) => boolean): StepSkip[] {
  const out: StepSkip[] = [];
  if (asks.length === 0) return out;
  for (const s of plan.order) {
    const ask = asks.find((a) => a.waits.includes(s.id));
    if (!ask) continue;
    const needed = (plan.dependents.get(s.id) ?? []).some(
      (d) => !settled(d) && !asks.some((a) => a.by === d && a.waits.includes(s.id)),
    );
    if (!needed)
      out.push({
        stepId: s.id,
        reason: "superseded",
        detail: `${ask.by} went on ${ask.on} (trigger any)`.slice(0, 500),
      });
  }
  return out;
}
// Memoized per DAG (steps array identity): a long execution re-plans after every step, and the
// order depends on the DAG alone. Deterministic, so the cache changes no answer.
const plans = new WeakMap<readonly Step[], Plan>();
function planOf(steps: readonly Step[]): Plan {
  let plan = plans.get(steps);
  if (!plan) {
    const levels = topologicalLevels(steps);
    const dependents = new Map<string, string[]>();
    for (const s of steps) for (const d of s.dependsOn) dependents.set(d, [...(dependents.get(d) ?? []), s.id]);
    const waits = new Set(steps.filter((s) => s.kind === "wait").map((s) => s.id as string));
    plan = {
      order: [...steps].sort((a, b) => (levels.get(a.id) ?? 0) - (levels.get(b.id) ?? 0) || byId(a, b)),
      byId: new Map(steps.map((s) => [s.id as string, s])),
      dependents,
      isWait: (id) => waits.has(id),
    };
    plans.set(steps, plan);
  }
  return plan;
}

/**
 * After attempt `attempt` of `step` failed at `now`: the time the next attempt may start, or
 * undefined when the retry budget is spent. The delay is backoffMs · 2^(attempt−1), capped at
 * retry.maxDelayMs, minus `jitter · unit` of it, where `unit` ∈ [0, 1) is the caller's (the runtime
 * derives it from execution, step and attempt, so it is the same wherever the attempt failed).
 */
export function retryAtAfterFailure(
  step: Pick<Step, "retry">,
  attempt: number,
  now: number,
  unit = 0,
): number | undefined {
  if (attempt >= step.retry.maxAttempts) return undefined;
  const full = Math.min(step.retry.backoffMs * 2 ** (attempt - 1), step.retry.maxDelayMs ?? Number.POSITIVE_INFINITY);
  const jitter = step.retry.jitter ?? 0;
  return now + Math.round(full * (1 - jitter * Math.min(Math.max(unit, 0), 1)));
}

const byId = (a: { id: string }, b: { id: string }): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
