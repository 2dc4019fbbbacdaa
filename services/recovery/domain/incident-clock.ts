import type { RuntimeRecord } from "./runtime-health.ts";

/**
 * What a failure's time is measured from. The moment a runtime died is not in the log; the closest
 * facts are `host-exit` (its host's exit or its Pod's deletion, recorded by the provisioner as it
 * saw it, when that is what made the runtime suspect) and otherwise `last-heartbeat` (the stream's
 * time of its incarnation's last beat: the last proof of life, so the failure happened at most one
 * staleness bound after it and the duration is an upper bound).
 */
export type FailureBasis = "host-exit" | "last-heartbeat";

export interface FailureTime {
  readonly basis: FailureBasis;
  readonly atMs: number;
}

/** When `rt` failed, as far as the log shows (see {@link FailureBasis}); undefined when it never was live. Pure. */
export function failureTime(rt: RuntimeRecord, lastBeatMs: number | undefined): FailureTime | undefined {
  const code = rt.suspected?.reason.code;
  if ((code === "host-exited" || code === "pod-deleted") && rt.exitedAtMs !== undefined)
    return { basis: "host-exit", atMs: rt.exitedAtMs };
  const at = lastBeatMs ?? rt.publishedAtMs;
  return at === undefined ? undefined : { basis: "last-heartbeat", atMs: at };
}

/**
 * Whether `rt`'s failure incident is open: suspected, and not yet planned, or with a planned item
 * whose forensics record has not ended (`execution-recovery-completed`). Pure.
 */
export function isOpenIncident(rt: RuntimeRecord, itemEnded: (forensicsId: string) => boolean): boolean {
  if (!rt.suspected) return false;
  if (!rt.planned) return true;
  return (rt.plannedItemIds ?? []).some((id) => !itemEnded(id));
}
