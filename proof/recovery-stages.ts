import type { StoredEvent } from "../streams/index.ts";
import type { KillRecord } from "./assertions.ts";
import { quantiles, type Quantiles } from "./startup-latencies.ts";

/**
 * The stages of one kill's recovery, in the order they normally happen, each found in the event log
 * (server timestamps) and measured from the kill: the killed runtime's suspicion and fence, the
 * execution paused, the replacement runtime's scale-out request, registration (a claimed warm pool
 * member or a host start requested), host started, readiness layers, capacity, the run admitted and
 * dispatched to the replacement (admission), then the recovery's own forensics steps (written once
 * recovery's follower saw those) and the execution resumed on the replacement.
 */
export const RECOVERY_STAGES = [
  "suspected",
  "fenced",
  "paused",
  "scaleOutRequested",
  "registered",
  "hostStarted",
  "layerHost",
  "layerCommand",
  "capacityPublished",
  "admitted",
  "dispatched",
  "replacementSelected",
  "localRunRegistered",
  "resumeStarted",
  "resumed",
] as const;
export type RecoveryStage = (typeof RECOVERY_STAGES)[number];

/** One kill's stage times, ms after the kill (NaN where the stage is not in the log), and how its replacement came. */
export interface StageTrace {
  readonly runtimeInstanceId: string;
  readonly replacement: string;
  readonly warm: boolean;
  readonly at: Readonly<Record<RecoveryStage, number>>;
}

/** Every kill's trace (pure: the log and the kill records in, no clock). */
export function recoveryStageTraces(log: readonly StoredEvent[], kills: readonly KillRecord[]): StageTrace[] {
  const byRuntime = new Map<string, StoredEvent[]>();
  const requested = new Map<string, number>();
  for (const e of log) {
    if (e.event.type === "scaleout.requested") requested.set(e.subject.split(".").at(-2) ?? "", e.time.getTime());
    if (!e.event.type.startsWith("runtime.")) continue;
    const id = e.subject.split(".").at(-2) ?? "";
    const list = byRuntime.get(id);
    if (list) list.push(e);
    else byRuntime.set(id, [e]);
  }
  return kills.map((k) => {
    const since = (e: StoredEvent | undefined) => (e ? e.time.getTime() - k.killedAtMs : Number.NaN);
    const own = byRuntime.get(k.runtimeInstanceId) ?? [];
    const ofExec = (type: string) =>
      log.find((e) => e.event.type === type && e.subject.endsWith(`.${k.executionId}.${type.slice(5)}`));
    const fx = (name: string) =>
      log.find(
        (e) =>
          e.event.type === `forensics.${name}` &&
          (e.event.data as { executionId?: string }).executionId === k.executionId,
      );
    const resumed = ofExec("exec.resumed");
    const selected = fx("replacement-runtime-selected");
    const replacement =
      (resumed?.event.data as { runtimeInstanceId?: string } | undefined)?.runtimeInstanceId ??
      (selected?.event.data as { replacementRuntimeInstanceId?: string } | undefined)?.replacementRuntimeInstanceId ??
      "";
    const rep = byRuntime.get(replacement) ?? [];
    // The run's own placement on the replacement (the forensics record of it comes later, from recovery).
    const ofRun = (type: string) =>
      log.find(
        (e) =>
          e.event.type === type &&
          e.subject.endsWith(`.run.${k.tenantId}.${k.sharedRunId}.${type.slice(4)}`) &&
          (e.event.data as { runtimeInstanceId?: string }).runtimeInstanceId === replacement,
      );
    const find = (list: StoredEvent[], type: string, layer?: string) =>
      list.find(
        (e) => e.event.type === type && (layer === undefined || (e.event.data as { layer?: string }).layer === layer),
      );
    const reg = find(rep, "runtime.registered");
    const requestId = (reg?.event.data as { scaleOutRequestId?: string } | undefined)?.scaleOutRequestId;
    const started = find(rep, "runtime.host-started")?.event.data as { convergenceSource?: string } | undefined;
    const req = requestId !== undefined ? requested.get(requestId) : undefined;
    return {
      runtimeInstanceId: k.runtimeInstanceId,
      replacement,
      warm: started?.convergenceSource?.startsWith("warm-pool:") ?? false,
      at: {
        suspected: since(find(own, "runtime.suspected")),
        fenced: since(find(own, "runtime.fenced")),
        paused: since(ofExec("exec.paused-for-recovery")),
        scaleOutRequested: req === undefined ? Number.NaN : req - k.killedAtMs,
        registered: since(reg),
        hostStarted: since(find(rep, "runtime.host-started")),
        layerHost: since(find(rep, "runtime.readiness-layer-passed", "host")),
        layerCommand: since(find(rep, "runtime.readiness-layer-passed", "command")),
        capacityPublished: since(find(rep, "runtime.capacity-published")),
        admitted: since(ofRun("run.admitted")),
        dispatched: since(ofRun("run.dispatched")),
        replacementSelected: since(selected),
        localRunRegistered: since(fx("replacement-local-run-registered")),
        resumeStarted: since(fx("dag-resume-started")),
        resumed: since(resumed),
      },
    };
  });
}

/** p50/p99 of each stage over the traces (ms after the kill). */
export function stageQuantiles(traces: readonly StageTrace[]): Record<RecoveryStage, Quantiles> {
  return Object.fromEntries(RECOVERY_STAGES.map((s) => [s, quantiles(traces.map((t) => t.at[s]))])) as Record<
    RecoveryStage,
    Quantiles
  >;
}

/** The traces as a text table: one row per kill, then p50 and p99 rows (ms after the kill). */
export function stageTable(traces: readonly StageTrace[]): string {
  const q = stageQuantiles(traces);
  const cell = (v: number) => (Number.isFinite(v) ? String(Math.round(v)) : "-").padStart(7);
  const head = ["kill", ...RECOVERY_STAGES.map((s) => s.slice(0, 7).padStart(7))].join(" ");
  const rows = traces.map((t) =>
    [
      `${t.runtimeInstanceId.slice(-6)}${t.warm ? "w" : "c"}`.padEnd(7),
      ...RECOVERY_STAGES.map((s) => cell(t.at[s])),
    ].join(" "),
  );
  const summary = (["p50", "p99"] as const).map((p) =>
    [p.padEnd(7), ...RECOVERY_STAGES.map((s) => cell(q[s][p]))].join(" "),
  );
  return [head, ...rows, ...summary].join("\n");
}

/**
 * The stage table under its title, as `drover proof` (indented, among its summary lines) and the
 * recovery benches print it: "stages<where> (ms after each kill; …):" then `stageTable`. Nothing
 * when there was no kill.
 */
export function stageSection(traces: readonly StageTrace[], where = "", indent = ""): string[] {
  if (traces.length === 0) return [];
  const title = `stages${where} (ms after each kill; w: warm pool member, c: cold start):`;
  return [title, ...stageTable(traces).split("\n")].map((line) => indent + line);
}
