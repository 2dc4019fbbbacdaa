import { lookupRef, parseMapItemId, toleratedCount, type DataOf, type Step } from "../../contracts/index.ts";
import type { ExecEvent, ExecutionState } from "../execution.ts";
import { itemStep, mapOutput } from "../map.ts";
import type { ScheduleDecision } from "../scheduler.ts";
import { canonicalJson } from "../step-inputs.ts";
import type { Divergence } from "./result.ts";

type Check = Omit<Divergence, "scope"> | undefined;

/** Offer key of a map expansion the scheduler chose at some point of the replay. */
export const expandKey = (stepId: string): string => `map:${stepId}`;

/**
 * Adds a decision's map expansions and settlements to the offered set: an expansion offers the
 * `map-expanded` (and attempt 1 of the map step, which fails there when the array is too large or no
 * array); a settlement offers attempt 1 of the map step (its `step-completed` or `step-failed`).
 */
export function offerMaps(offered: Set<string>, d: ScheduleDecision, key: (id: string, n: number) => string): void {
  if (d.kind !== "continue") return;
  for (const id of d.expand ?? []) offered.add(expandKey(id)).add(key(id, 1));
  for (const s of d.settle ?? []) offered.add(key(s.stepId, 1));
}

/** The step a journal's step id names: a DAG step, or an item of a map the journal expanded (undefined otherwise). */
export function stepFor(byId: ReadonlyMap<string, Step>, state: ExecutionState, id: string): Step | undefined {
  const own = byId.get(id);
  if (own) return own;
  const item = parseMapItemId(id, (m) => byId.get(m)?.map !== undefined);
  if (!item) return undefined;
  const m = state.maps.get(item.stepId);
  if (!m || item.index >= m.count) return undefined;
  return itemStep(byId.get(item.stepId)!, id);
}

/** Why a step event names an item the journal never expanded (undefined: it is not an item id, or a sound one). */
export function unexpandedItem(byId: ReadonlyMap<string, Step>, state: ExecutionState, id: string): string | undefined {
  const item = parseMapItemId(id, (m) => byId.get(m)?.map !== undefined);
  if (!item) return undefined;
  const m = state.maps.get(item.stepId);
  return m
    ? `item ${item.index} of map step ${item.stepId}, which expanded into ${m.count} items`
    : `an item of map step ${item.stepId}, which had not been expanded`;
}

export interface MapCtx {
  readonly state: ExecutionState;
  readonly offered: ReadonlySet<string>;
  readonly input?: { readonly value: unknown };
  readonly digest?: (s: string) => string;
  readonly storedOutputs?: ReadonlyMap<string, string>;
}

/**
 * Checks a `map-expanded`: the scheduler re-run over the journal chose to expand the step; the caps
 * are the DAG's; and, given the run input and a digest, `map.over` re-resolves over the input and
 * the recorded outputs to an array of `count` items with the journaled digest (`map-rederivation`).
 */
export function mapExpandedProblem(
  seq: number,
  event: Extract<ExecEvent, { type: "exec.map-expanded" }>,
  step: Step,
  c: MapCtx,
): Check {
  const { stepId, count, itemsDigest, maxConcurrency, toleratedFailures } = event.data;
  if (!step.map || !c.offered.has(expandKey(stepId)))
    return {
      invariant: "scheduler-divergence",
      seq,
      message: `map-expanded ${stepId} at seq ${seq}: ${step.map ? "its dependencies had not settled, or it was skipped" : "the step is not a map step"}`,
    };
  const wantTolerated = toleratedCount(step.map.toleratedFailures, count);
  if (maxConcurrency !== step.map.maxConcurrency || toleratedFailures !== wantTolerated)
    return {
      invariant: "map-rederivation",
      seq,
      message: `map-expanded ${stepId} at seq ${seq} journals caps (maxConcurrency ${maxConcurrency}, toleratedFailures ${toleratedFailures}); the DAG gives ${step.map.maxConcurrency} and ${wantTolerated}`,
    };
  if (!c.input || !c.digest) return undefined;
  const outputs = recordedOutputs(c.state, c.storedOutputs);
  if (!outputs) return undefined;
  const items = lookupRef(step.map.over, { input: c.input.value, outputs });
  const got = Array.isArray(items) ? { count: items.length, digest: c.digest(canonicalJson(items)) } : undefined;
  if (got && got.count === count && got.digest === itemsDigest) return undefined;
  return {
    invariant: "map-rederivation",
    seq,
    message: `map-expanded ${stepId} at seq ${seq} journals ${count} items (digest ${itemsDigest.slice(0, 12)}…), but ${step.map.over} re-resolves over the recorded input and outputs to ${got ? `${got.count} items (digest ${got.digest.slice(0, 12)}…)` : "no array"}`,
  };
}

/**
 * Re-derives a map step's recorded output from its items' recorded outputs and spent failures
 * (undefined when it re-derives, or when an item's stored output is not at hand).
 */
export function mapOutputProblem(
  step: Step,
  data: DataOf<"exec.step-completed">,
  state: ExecutionState,
  digest: (s: string) => string,
  stored?: ReadonlyMap<string, string>,
): string | undefined {
  const m = state.maps.get(step.id);
  if (!m) return `map step ${step.id} completed without a map-expanded`;
  const outputs = recordedOutputs(state, stored);
  if (!outputs) return undefined;
  const failed: { index: number; error: string }[] = [];
  for (let i = 0; i < m.count; i++) {
    const id = `${step.id}--${i}`;
    if (outputs.has(id)) continue;
    const f = state.failures.get(id);
    if (!f) return `map step ${step.id} completed while its item ${i} had neither completed nor failed`;
    failed.push({ index: i, error: f.error ?? "" });
  }
  const want = digest(canonicalJson(mapOutput(m.count, (i) => outputs.get(`${step.id}--${i}`), failed)));
  if (want === data.outputDigest) return undefined;
  return `map step ${step.id}'s recorded output (digest ${data.outputDigest}) is not its items' recorded outputs in index order with the failed items (digest ${want})`;
}

/** Every completed step's output (stored ones parsed from `stored`), or undefined when a stored one is not at hand. */
function recordedOutputs(
  state: ExecutionState,
  stored?: ReadonlyMap<string, string>,
): Map<string, unknown> | undefined {
  const outputs = new Map<string, unknown>();
  for (const [id, c] of state.completed) {
    if (!c.outputRef) {
      outputs.set(id, c.output);
      continue;
    }
    const text = stored?.get(c.outputRef.name);
    if (text === undefined) return undefined;
    outputs.set(id, JSON.parse(text) as unknown);
  }
  return outputs;
}
