import { FLOW_KEY_PLACEHOLDER, type FlowKeySettings, type Reason } from "../../../contracts/index.ts";
import { gcra } from "../../../contracts/gcra.ts";

/** What a run offers flow key expressions: its input and labels as submitted. */
export interface KeyedRun {
  readonly input?: unknown;
  readonly labels?: Readonly<Record<string, string>>;
}

/** One flow key a run falls under: the setting and the resolved value (e.g. `openai:gpt-4o`). */
export interface RunKey {
  readonly setting: FlowKeySettings;
  readonly value: string;
}

const scalar = (v: unknown): string | undefined =>
  typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? String(v) : undefined;

function lookup(run: KeyedRun, path: string): string | undefined {
  const [root, ...rest] = path.split(".");
  if (root === "labels") return run.labels?.[rest.join(".")];
  let v: unknown = run.input;
  for (const seg of rest) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[seg];
  }
  return scalar(v);
}

/**
 * The value of one key expression for a run (pure), or undefined when a placeholder does not resolve
 * to a string, number or boolean (the run is then not under that key). `openai:{input.model}` with
 * input `{model: "gpt-4o"}` is `openai:gpt-4o`.
 */
export function resolveKey(expression: string, run: KeyedRun): string | undefined {
  let missing = false;
  const value = expression.replace(FLOW_KEY_PLACEHOLDER, (_, path: string) => {
    const v = lookup(run, path);
    if (v === undefined) missing = true;
    return v ?? "";
  });
  return missing ? undefined : value.slice(0, 512);
}

/** Every key of the tenant the run falls under, by setting name (the order keys are taken in: no deadlock). */
export function runKeys(settings: readonly FlowKeySettings[], run: KeyedRun): RunKey[] {
  return [...settings]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((setting) => {
      const value = resolveKey(setting.key, run);
      return value === undefined ? [] : [{ setting, value }];
    });
}

/** The state of one key value, folded from its aggregate. */
export interface FlowKeyState {
  /** Runs that acquired the key (they hold it until they end). */
  readonly holders: ReadonlySet<string>;
  /** GCRA theoretical arrival time (ms); 0 before the first admission. */
  readonly tatMs: number;
  readonly lastSeq: number;
}

export const emptyFlowKey = (): FlowKeyState => ({ holders: new Set(), tatMs: 0, lastSeq: 0 });

/** Folds one `flowkey.acquired` (pure, idempotent by sequence). */
export function evolveFlowKey(
  s: FlowKeyState,
  e: { readonly sharedRunId: string; readonly tat?: string },
  seq: number,
): FlowKeyState {
  if (seq <= s.lastSeq) return s;
  return {
    holders: new Set([...s.holders, e.sharedRunId]),
    tatMs: e.tat === undefined ? s.tatMs : Math.max(s.tatMs, Date.parse(e.tat)),
    lastSeq: seq,
  };
}

export type KeyDecision =
  | { readonly kind: "holds" }
  | { readonly kind: "acquire"; readonly inFlight: number; readonly tatMs?: number }
  | { readonly kind: "wait"; readonly reason: Reason };

/**
 * Whether a run may take a key now (pure). A run that holds it goes on; otherwise at most
 * `concurrency` holders may still be running (`ended` says which have ended, from the run log), a
 * higher-priority run of the tenant held back on this key in this pass keeps lower ones back, and
 * the GCRA throttle must conform. The reason names the key and the count or the time it waits for.
 */
export function decideKey(
  key: RunKey,
  state: FlowKeyState,
  run: { readonly sharedRunId: string; readonly priority: number },
  now: number,
  ended: (sharedRunId: string) => boolean,
  heldAbove?: number,
): KeyDecision {
  if (state.holders.has(run.sharedRunId)) return { kind: "holds" };
  const inFlight = [...state.holders].filter((h) => !ended(h)).length;
  const { concurrency, rate } = key.setting;
  if (concurrency !== undefined && inFlight >= concurrency)
    return wait("waiting-for-key", `waiting-for-key ${key.value} ${inFlight}/${concurrency}`);
  if (heldAbove !== undefined && heldAbove > run.priority)
    return wait("waiting-for-key", `waiting-for-key ${key.value}: a priority ${heldAbove} run waits for it first`);
  if (rate === undefined) return { kind: "acquire", inFlight };
  const g = gcra(state.tatMs, now, rate.perSecond, rate.burst);
  if (!g.ok)
    return wait("key-rate-limited", `rate-limited until ${new Date(g.retryAtMs).toISOString()} (${key.value})`);
  return { kind: "acquire", inFlight, tatMs: g.tatMs };
}

const wait = (code: "waiting-for-key" | "key-rate-limited", detail: string): KeyDecision => ({
  kind: "wait",
  reason: { code, detail },
});
