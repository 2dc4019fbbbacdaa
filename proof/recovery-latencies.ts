import type { StoredEvent } from "../streams/index.ts";
import type { KillRecord } from "./assertions.ts";

/** p50 and p99 of one latency series, ms (NaN when empty). */
export interface Quantiles {
  readonly p50: number;
  readonly p99: number;
}
export type RecoveryLatencies = Readonly<
  Record<"suspected" | "fenced" | "resumed" | "gateSeen" | "gateSignal", Quantiles>
>;

/** Time from each kill to its runtime's `suspected`, `fenced`, and its execution's `resumed` (server timestamps). */
export function recoveryLatencies(log: readonly StoredEvent[], kills: readonly KillRecord[]): RecoveryLatencies {
  const after = (k: KillRecord, pred: (e: StoredEvent) => boolean) => {
    const e = log.find(pred);
    return e ? e.time.getTime() - k.killedAtMs : Number.NaN;
  };
  const series = (f: (k: KillRecord) => number) => {
    const xs = kills
      .map(f)
      .filter(Number.isFinite)
      .sort((a, b) => a - b);
    const q = (p: number) => xs[Math.min(xs.length - 1, Math.max(0, Math.ceil(p * xs.length) - 1))] ?? Number.NaN;
    return { p50: q(0.5), p99: q(0.99) };
  };
  const onRuntime = (k: KillRecord, type: string) => (e: StoredEvent) =>
    e.event.type === type && e.subject.includes(`.runtime.${k.runtimeInstanceId}.`);
  return {
    suspected: series((k) => after(k, onRuntime(k, "runtime.suspected"))),
    fenced: series((k) => after(k, onRuntime(k, "runtime.fenced"))),
    resumed: series((k) =>
      after(k, (e) => e.event.type === "exec.resumed" && e.subject.endsWith(`.${k.executionId}.resumed`)),
    ),
    gateSeen: series((k) => k.stepSeenAtMs - k.stepDurableAtMs),
    gateSignal: series((k) => k.killedAtMs - k.stepDurableAtMs),
  };
}
