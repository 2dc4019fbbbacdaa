import {
  lookupRef,
  parseMapItemId,
  toleratedCount,
  type ErrorCode,
  type Step,
  type StepId,
} from "../../../contracts/index.ts";
import { mapOutput, mapSource, type MapExpansion, type MapSettle } from "../../../aggregates/map.ts";
import type { ScheduleDecision } from "../../../aggregates/scheduler.ts";
import { canonicalJson } from "../../../aggregates/step-inputs.ts";
import type { OutputStore } from "../../../platform/output-store.ts";
import type { OpenedExecution } from "./execution-open.ts";
import type { SecretResolver } from "./secrets.ts";
import { recordableOutput } from "./step-output.ts";
import { sha256Hex } from "./step-runners.ts";

/** What an execution lends the map writer: its journal, input, (mutable) progress and output values. */
export interface MapHost {
  readonly opened: OpenedExecution;
  readonly input: unknown;
  /** The largest map this runtime expands (10 000 by default; injectable for tests, not configurable yet): more items fail with map-too-large. */
  readonly maxItems: number;
  readonly outputs?: OutputStore;
  readonly secrets?: SecretResolver;
  readonly maps: Map<string, MapExpansion & { readonly itemsDigest: string }>;
  readonly failures: Map<string, { attempt: number; retryAt?: number }>;
  readonly lastErrors: Map<string, { code?: ErrorCode; message: string }>;
  readonly stepOf: (stepId: string) => Step;
  /** A completed step's output value (null for a skipped one). */
  readonly valueOf: (stepId: string) => Promise<unknown>;
  /** Records a durable step-completed in the execution's progress. */
  readonly completedNow: (stepId: string, value: unknown, outputDigest: string) => void;
}

/** Resolved item arrays per map step: resolved once per process (a resumed one re-resolves and checks the digest). */
const resolved = new WeakMap<MapHost, Map<string, readonly unknown[]>>();

/**
 * Makes a decision's map expansions and settlements durable (docs/control-flow.md "Map"), each
 * before it counts: `map-expanded` (or a non-retryable `step-failed` of the map step with
 * `map-too-large` / `map-source-invalid`), then for a settled map its `step-completed` (output
 * `{ items, failed }`, stored like any output when large) or `step-failed` (`map-failures-exceeded`,
 * naming the first failed item). Returns whether it wrote anything (the caller then decides again).
 */
export async function settleMaps(d: ScheduleDecision, host: MapHost): Promise<boolean> {
  if (d.kind !== "continue") return false;
  for (const stepId of d.expand ?? []) await expand(host.stepOf(stepId), host);
  for (const s of d.settle ?? []) await settle(s, host);
  return (d.expand?.length ?? 0) + (d.settle?.length ?? 0) > 0;
}

async function sourceOf(step: Step, host: MapHost): Promise<unknown> {
  const over = step.map!.over;
  const dep = over.startsWith("steps.") ? over.split(".")[1]! : undefined;
  const outputs = new Map<string, unknown>(dep ? [[dep, await host.valueOf(dep)]] : []);
  return lookupRef(over, { input: host.input ?? null, outputs });
}

async function expand(step: Step, host: MapHost): Promise<void> {
  const { opened } = host;
  const source = mapSource(await sourceOf(step, host), step.map!.over, host.maxItems);
  if (!source.ok) return failMap(step.id, source.code, source.detail, host);
  const data = {
    stepId: step.id,
    count: source.items.length,
    itemsDigest: sha256Hex(canonicalJson(source.items)),
    maxConcurrency: step.map!.maxConcurrency,
    toleratedFailures: toleratedCount(step.map!.toleratedFailures, source.items.length),
  };
  await opened.exec.append(opened.emit("exec.map-expanded", data));
  host.maps.set(step.id, data);
  itemsOf(host).set(step.id, source.items);
}

async function settle(s: MapSettle, host: MapHost): Promise<void> {
  const itemId = (i: number) => `${s.stepId}--${i}`;
  const failed = s.failed.map((index) => ({ index, error: host.lastErrors.get(itemId(index))?.message ?? "" }));
  const m = host.maps.get(s.stepId)!;
  if (s.outcome === "failed") {
    const first = failed[0]!;
    const detail = `${failed.length} of ${m.count} items failed, more than the ${m.toleratedFailures} tolerated; first item ${first.index} (${itemId(first.index)}): ${first.error}`;
    return failMap(s.stepId, "map-failures-exceeded", detail, host);
  }
  const gone = new Set(s.failed);
  const values = new Map<number, unknown>();
  for (let i = 0; i < m.count; i++) if (!gone.has(i)) values.set(i, await host.valueOf(itemId(i)));
  const raw = mapOutput(m.count, (i) => values.get(i), failed);
  const prefix = `${host.opened.tenantId}/${host.opened.executionId}/${s.stepId}`;
  const { value, outputDigest, output, outputRef } = await recordableOutput(raw, prefix, host.outputs, host.secrets);
  await host.opened.exec.append(
    host.opened.emit("exec.step-completed", {
      stepId: s.stepId,
      attempt: 1,
      ...(outputRef ? { outputRef } : { output }),
      outputDigest,
      durationMs: 0,
    }),
  );
  host.completedNow(s.stepId, value, outputDigest);
}

async function failMap(stepId: StepId, code: ErrorCode, detail: string, host: MapHost): Promise<void> {
  const error = detail.slice(0, 2000);
  await host.opened.exec.append(host.opened.emit("exec.step-failed", { stepId, attempt: 1, error, code }));
  host.failures.set(stepId, { attempt: 1 });
  host.lastErrors.set(stepId, { code, message: error });
}

function itemsOf(host: MapHost): Map<string, readonly unknown[]> {
  let m = resolved.get(host);
  if (!m) resolved.set(host, (m = new Map()));
  return m;
}

/**
 * The item an item step runs on: from the expansion this process made, or (resumed) re-resolved
 * from the input and the recorded outputs and checked against the journaled digest. Undefined for
 * an id that is no item.
 */
export async function itemValue(itemId: string, host: MapHost): Promise<{ readonly item: unknown } | undefined> {
  const ref = parseMapItemId(itemId, (id) => host.maps.has(id));
  if (!ref) return undefined;
  const items = itemsOf(host);
  let list = items.get(ref.stepId);
  if (!list) {
    const source = await sourceOf(host.stepOf(ref.stepId), host);
    const want = host.maps.get(ref.stepId)!.itemsDigest;
    if (!Array.isArray(source) || sha256Hex(canonicalJson(source)) !== want)
      throw new Error(`map step ${ref.stepId}: its source no longer re-resolves to the journaled items (${want})`);
    list = source;
    items.set(ref.stepId, list);
  }
  return { item: list[ref.index] ?? null };
}
