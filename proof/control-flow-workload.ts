import type { DagInput } from "../contracts/index.ts";
import type { MapItem } from "./custom-worker.ts";

/** The map step, its fan-in and the wait of `--workload control-flow` (docs/proof-and-bench.md). */
export const CF_MAP = "fanout";
export const CF_FANIN = "fanin";
export const CF_WAIT = "approval";
/** The signal that resolves the wait; the proof sends it with the tenant's `approver` token. */
export const CF_SIGNAL = "approval";
/** The token name the wait's `resolvers` allow (the proof's tenants each have one such token). */
export const CF_RESOLVER = "approver";
/** Items of the map that run at once (the proof's runtimes give a run that many workers). */
export const CF_MAX_CONCURRENCY = 3;

/**
 * The control-flow workload: `prep`, then two branches: the map `fanout` over the run's
 * `input.items` (the tenant worker's `cf-item` per item, `maxConcurrency` 3) whose fan-in `fanin`
 * receives the ordered item outputs, and the wait `approval` that only the tenant's `approver` token
 * may resolve; `finish` goes once both settled and the signal's payload approved (`when`).
 */
export function controlFlowDag(stepMs: number): DagInput {
  return {
    name: "proof-control-flow",
    steps: [
      { id: "prep", kind: "compute", params: { durationMs: stepMs } },
      {
        id: CF_MAP,
        kind: "custom",
        handler: "cf-item",
        dependsOn: ["prep"],
        map: { over: "input.items", maxConcurrency: CF_MAX_CONCURRENCY, toleratedFailures: 0 },
        params: { item: { $ref: "item" } },
      },
      {
        id: CF_FANIN,
        kind: "custom",
        handler: "cf-fanin",
        dependsOn: [CF_MAP],
        params: { items: { $ref: `steps.${CF_MAP}.output.items` }, failed: { $ref: `steps.${CF_MAP}.output.failed` } },
      },
      {
        id: CF_WAIT,
        kind: "wait",
        dependsOn: ["prep"],
        params: {
          name: CF_SIGNAL,
          timeoutMs: 600_000,
          resolvers: [`token:${CF_RESOLVER}`],
          schema: {
            type: "object",
            required: ["approved"],
            additionalProperties: false,
            properties: { approved: { type: "boolean" } },
          },
        },
      },
      {
        id: "finish",
        kind: "compute",
        dependsOn: [CF_FANIN, CF_WAIT],
        when: `steps.${CF_WAIT}.output.approved`,
        params: { durationMs: stepMs },
      },
    ],
  } as DagInput;
}

/**
 * The run's input: `items` map items of `stepMs` each. `hold`: the runs of impacted tenants (the
 * gate kills whichever of a tenant's runs executes first, and that need not be the first submitted)
 * — the items from `hold.from` on that start before the kill work `hold.ms` (the next
 * `maxConcurrency` of them), so the kill lands while they are in flight even when the gate lags.
 */
export function controlFlowInput(
  items: number,
  stepMs: number,
  hold?: { readonly from: number; readonly ms: number },
): { items: MapItem[] } {
  return {
    items: Array.from({ length: items }, (_, i) => ({
      i,
      ms: hold && i >= hold.from && i < hold.from + CF_MAX_CONCURRENCY ? hold.ms : stepMs,
    })),
  };
}
