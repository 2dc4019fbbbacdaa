import type { StoredEvent } from "../streams/index.ts";
import type { KillRecord } from "./assertions.ts";
import { quantiles, type Quantiles } from "./startup-latencies.ts";

export type RecoveryLatencies = Readonly<
  Record<"suspected" | "fenced" | "resumed" | "gateSeen" | "gateSignal", Quantiles>
>;

/** Time from each kill to its runtime's `suspected`, `fenced`, and its execution's `resumed` (server timestamps). */
export function recoveryLatencies(log: readonly StoredEvent[], kills: readonly KillRecord[]): RecoveryLatencies {
  const after = (k: KillRecord, pred: (e: StoredEvent) => boolean) => {
    const e = log.find(pred);
    return e ? e.time.getTime() - k.killedAtMs : Number.NaN;
  };
  const series = (f: (k: KillRecord) => number) => quantiles(kills.map(f));
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
