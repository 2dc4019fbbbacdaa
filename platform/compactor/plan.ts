import type { DroverEvent } from "../../contracts/index.ts";
import type { StreamLayout } from "../../streams/index.ts";

/** The run events after which a run does nothing more (aggregates/run.ts statuses completed/failed/cancelled/rejected). */
export const TERMINAL_RUN_EVENTS: ReadonlySet<string> = new Set([
  "run.completed",
  "run.failed",
  "run.cancelled",
  "run.rejected",
]);
export const TERMINAL_RUN_NAMES = [...TERMINAL_RUN_EVENTS].map((t) => t.slice("run.".length));

/**
 * The aggregates that make up one run in the log, each as its OCC wildcard: the run itself, the
 * executions it started and the scale-out requests it made. Forensics records and runtimes are not
 * a run's (they outlive it; docs/retention.md "What is removed"). Pure.
 */
export function runAggregates(
  layout: StreamLayout,
  tenantId: string,
  sharedRunId: string,
  runEvents: readonly DroverEvent[],
): string[] {
  const p = layout.eventPrefix;
  const ids = (type: string, field: string) => [
    ...new Set(
      runEvents
        .filter((e) => e.type === type)
        .map((e) => (e.data as Record<string, unknown>)[field])
        .filter((v): v is string => typeof v === "string"),
    ),
  ];
  return [
    ...ids("run.started", "executionId").map((x) => `${p}.exec.${tenantId}.${x}.>`),
    ...ids("run.scale-out-requested", "requestId").map((x) => `${p}.scaleout.${tenantId}.${x}.>`),
    // Last: a compaction interrupted half-way still finds the run, and through it the rest.
    `${p}.run.${tenantId}.${sharedRunId}.>`,
  ];
}

export type Skip =
  | "immutable-stream"
  | "no-events"
  | "not-terminal"
  | "within-retention"
  | "not-projected"
  | "archive-incomplete"
  | "changed";

/**
 * Whether a run may be removed now, from what the log says of it (docs/retention.md "When a run
 * is removed"): its last event is terminal, that event is older than the retention window (by the
 * server's stored time, never a writer's clock) and the read models have projected past its last
 * event. Undefined: yes. Pure.
 */
export function judge(o: {
  readonly lastType: string;
  readonly endedAtMs: number;
  readonly nowMs: number;
  readonly retentionMs: number;
  readonly lastSeq: number;
  readonly projectedThrough: number;
}): { readonly skip: Skip; readonly detail: string } | undefined {
  if (!TERMINAL_RUN_EVENTS.has(o.lastType)) return { skip: "not-terminal", detail: `its last event is ${o.lastType}` };
  const age = o.nowMs - o.endedAtMs;
  if (age < o.retentionMs)
    return {
      skip: "within-retention",
      detail: `ended ${Math.round(age / 1000)} s ago, retention ${o.retentionMs / 1000} s`,
    };
  if (o.projectedThrough < o.lastSeq)
    return {
      skip: "not-projected",
      detail: `read models at sequence ${o.projectedThrough}, the run's last event at ${o.lastSeq}`,
    };
  return undefined;
}
