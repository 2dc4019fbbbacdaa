import { mapItemId, type DataOf, type Step, type StepId } from "../contracts/index.ts";

/** A map step's journaled expansion, as the scheduler needs it (`exec.map-expanded`). */
export type MapExpansion = Pick<DataOf<"exec.map-expanded">, "count" | "maxConcurrency" | "toleratedFailures">;

/** A map whose items have all settled (or too many failed): the runtime journals the map step's outcome. */
export interface MapSettle {
  readonly stepId: StepId;
  readonly outcome: "completed" | "failed";
  /** Indices of the items with no attempt left, ascending. */
  readonly failed: readonly number[];
}

export interface MapItemsView {
  readonly completed: ReadonlySet<string>;
  readonly failures: ReadonlyMap<string, { readonly attempt: number; readonly retryAt?: number }>;
  readonly running: ReadonlySet<string>;
}

export interface MapItemsDecision {
  /** Items to start now, in index order, at most maxConcurrency minus the items running. */
  readonly start: readonly { readonly stepId: StepId; readonly attempt: number }[];
  readonly settle?: MapSettle;
  /** Earliest future retry time of an item that waits for one. */
  readonly wakeAt?: number;
}

// Item ids per (map step, count), memoized: a 10 000-item map is re-planned after every item.
const idCache = new Map<string, readonly StepId[]>();
export function itemIds(stepId: string, count: number): readonly StepId[] {
  const key = `${stepId}\u0000${count}`;
  let ids = idCache.get(key);
  if (!ids) {
    ids = Array.from({ length: count }, (_, i) => mapItemId(stepId, i) as StepId);
    if (idCache.size > 256) idCache.clear();
    idCache.set(key, ids);
  }
  return ids;
}

/** True when an item's latest failure leaves it no attempt (its budget is spent or it cannot be retried). */
const spent = (step: Pick<Step, "retry">, f: { attempt: number; retryAt?: number } | undefined): boolean =>
  f !== undefined && (f.attempt >= step.retry.maxAttempts || f.retryAt === undefined);

/**
 * Where an expanded map stands (docs/control-flow.md "Map"). Pure and deterministic:
 * - more spent items than tolerated → settle `failed` (no more items start);
 * - every item completed or spent → settle `completed` with the spent ones as `failed`;
 * - otherwise the lowest-index items that are neither settled, running nor waiting for a retry
 *   time, as many as `maxConcurrency` minus the items running.
 */
export function mapItems(
  step: Pick<Step, "id" | "retry">,
  m: MapExpansion,
  view: MapItemsView,
  now: number,
): MapItemsDecision {
  const ids = itemIds(step.id, m.count);
  const failed: number[] = [];
  const candidates: { stepId: StepId; attempt: number }[] = [];
  let done = 0;
  let running = 0;
  let wakeAt: number | undefined;
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    if (view.completed.has(id)) {
      done++;
      continue;
    }
    const f = view.failures.get(id);
    if (spent(step, f)) {
      failed.push(i);
      continue;
    }
    if (view.running.has(id)) {
      running++;
      continue;
    }
    if (f?.retryAt !== undefined && f.retryAt > now) {
      wakeAt = wakeAt === undefined ? f.retryAt : Math.min(wakeAt, f.retryAt);
      continue;
    }
    if (candidates.length < m.maxConcurrency) candidates.push({ stepId: id, attempt: (f?.attempt ?? 0) + 1 });
  }
  if (failed.length > m.toleratedFailures)
    return { start: [], settle: { stepId: step.id as StepId, outcome: "failed", failed } };
  if (done + failed.length === m.count)
    return { start: [], settle: { stepId: step.id as StepId, outcome: "completed", failed } };
  const start = candidates.slice(0, Math.max(0, m.maxConcurrency - running));
  return { start, ...(wakeAt === undefined ? {} : { wakeAt }) };
}

/**
 * The step an item runs: the map step's kind, params and retry policy under the item's id, without
 * the map's own `when`, `trigger` and `map` (those were decided for the map step as a whole).
 */
export function itemStep(mapStep: Step, itemId: string): Step {
  const { when: _w, trigger: _t, map: _m, ...rest } = mapStep;
  return { ...rest, id: itemId as StepId } as Step;
}

/** The array a map step maps over, or why it is not one (`map-source-invalid`) or too long (`map-too-large`). */
export function mapSource(
  source: unknown,
  over: string,
  maxItems: number,
):
  | { readonly ok: true; readonly items: readonly unknown[] }
  | { readonly ok: false; readonly code: "map-too-large" | "map-source-invalid"; readonly detail: string } {
  if (!Array.isArray(source))
    return {
      ok: false,
      code: "map-source-invalid",
      detail: `map.over "${over}" resolves to ${source === undefined ? "nothing" : `a ${source === null ? "null" : typeof source}`}, not an array`,
    };
  if (source.length > maxItems)
    return {
      ok: false,
      code: "map-too-large",
      detail: `map.over "${over}" has ${source.length} items, more than the bound of ${maxItems}`,
    };
  return { ok: true, items: source };
}

/** The map step's output: every item's output in index order (null for a failed item) and the failed items. */
export function mapOutput(
  count: number,
  outputOf: (index: number) => unknown,
  failed: readonly { readonly index: number; readonly error: string }[],
): { items: unknown[]; failed: { index: number; error: string }[] } {
  const gone = new Set(failed.map((f) => f.index));
  return {
    items: Array.from({ length: count }, (_, i) => (gone.has(i) ? null : (outputOf(i) ?? null))),
    failed: failed.map((f) => ({ index: f.index, error: f.error })),
  };
}
