/**
 * The worker of `drover proof --workload custom` (docs/sdk.md): the proof's chain of steps as tenant
 * code. Each step hashes its id with its predecessor's recorded output (passed by `$ref`), so an
 * output that was recomputed from the wrong input, or read back wrongly after a crash, changes every
 * later digest and the run's output. `pad` makes an output larger than the inline limit (it goes to
 * the object store and dependents read it back from there); `chain-flaky` fails its first
 * `failAttempts` attempts, deterministically, like the built-in `flaky`.
 */
import { createHash } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { defineWorker, type Json, type StepContext } from "drover/sdk";

export interface ChainInput {
  readonly durationMs: number;
  /** The predecessor's recorded output (a `$ref`), or null for the first step. */
  readonly prev: Json;
  /** Characters of padding in the output (0: none). */
  readonly pad?: number;
  readonly failAttempts?: number;
}

/** JSON with sorted keys: the digest must not depend on the key order an output was read back in. */
const canonical = (v: unknown): string =>
  v === null || typeof v !== "object"
    ? JSON.stringify(v)
    : Array.isArray(v)
      ? `[${v.map(canonical).join(",")}]`
      : `{${Object.keys(v)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
          .join(",")}}`;

/** What a chain step returns for its id and input: a pure function, so an uninterrupted run is computable offline. */
export function chainOutput(stepId: string, input: Pick<ChainInput, "prev" | "pad">): Json {
  const digest = createHash("sha256")
    .update(canonical([stepId, input.prev]))
    .digest("hex");
  return input.pad ? { digest, pad: "p".repeat(input.pad) } : { digest };
}

async function chain(ctx: StepContext, input: ChainInput): Promise<Json> {
  if (input.durationMs > 0) await delay(input.durationMs, undefined, { signal: ctx.signal });
  return chainOutput(ctx.stepId, input);
}

/** One item of the control-flow workload's map (proof/control-flow-workload.ts): its index and how long it works. */
export interface MapItem {
  readonly i: number;
  readonly ms: number;
}

/** What `cf-item` returns for an item: a pure function, so the fan-in's expected input is computable offline. */
export function mapItemOutput(item: MapItem): Json {
  return {
    index: item.i,
    digest: createHash("sha256")
      .update(canonical(["cf-item", item.i]))
      .digest("hex"),
  };
}

export default defineWorker({
  steps: {
    // The map's per-item kind: works the item's `ms`, then returns its output.
    "cf-item": async (ctx, input: { item: MapItem }) => {
      if (input.item.ms > 0) await delay(input.item.ms, undefined, { signal: ctx.signal });
      return mapItemOutput(input.item);
    },
    // The fan-in: returns what it received (the map's ordered item outputs and failed items), so the
    // journal records it and the proof compares it with every item's output in index order.
    "cf-fanin": async (_ctx, input: { items: Json; failed: Json }) => ({ received: input.items, failed: input.failed }),
    "chain-work": chain,
    "chain-flaky": async (ctx, input: ChainInput) => {
      const out = await chain(ctx, input);
      if (ctx.attempt <= (input.failAttempts ?? 0))
        throw new Error(`chain-flaky fails attempt ${ctx.attempt} of the first ${input.failAttempts}`);
      return out;
    },
  },
});

/** The handler names the proof tenants' settings declare (`--workload custom`). */
export const CHAIN_KINDS = ["chain-work", "chain-flaky"] as const;
/** The handler names of `--workload control-flow`. */
export const CONTROL_FLOW_KINDS = ["cf-item", "cf-fanin"] as const;
