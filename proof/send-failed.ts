import type { KillRecord, LoggedEvent } from "./assertions.ts";

/**
 * Why a run of a killed tenant, other than the killed execution's, was not in the killed runtime's
 * local queue, read from the log (undefined: it was, and must be requeued for local-queued recovery).
 *
 * - `send-failed`: admission records `run.dispatched` before it sends, and a send that meets the dead
 *   runtime (or, on a NATS cluster electing a leader, a send still in flight at the kill) fails with
 *   `run.dispatch-failed` naming that runtime; the run is placed again as ordinary queued work.
 * - `never-placed`: no `run.admitted` names the killed runtime. The kill gate waits only for the held
 *   execution's steps, so under load admission may not have placed a tenant's later runs yet when
 *   the runtime dies (seen at load ~27: the tenant's second run was sent after the kill, its third
 *   was still queued and, the runtime fenced, was placed on the replacement). Recovery's inventory is
 *   the runs whose placement names the fenced runtime: such a run is correctly not in it.
 *
 * Either way the run never reached the runtime, and is checked as what the log shows (never started
 * before, started exactly once after) instead of being counted as a missing local-queued recovery.
 * A run the log shows admitted to the killed runtime and neither requeued nor failed to send stays
 * local-queued, so a run recovery missed still fails the proof.
 */
export type NotQueuedAtKill = { readonly kind: "send-failed" | "never-placed"; readonly at: number };

export function notQueuedAtKill(
  byRun: ReadonlyMap<string, readonly LoggedEvent[]>,
  k: KillRecord,
  sharedRunId: string,
): NotQueuedAtKill | undefined {
  const run = byRun.get(`${k.tenantId}/${sharedRunId}`) ?? [];
  if (run.some((e) => e.event.type === "run.requeued-for-local-queued-recovery")) return undefined;
  const names = (e: LoggedEvent, type: string) =>
    e.event.type === type && (e.event.data as { runtimeInstanceId?: string }).runtimeInstanceId === k.runtimeInstanceId;
  const failedAt = run.findIndex((e) => names(e, "run.dispatch-failed"));
  if (failedAt >= 0) return { kind: "send-failed", at: failedAt };
  if (!run.some((e) => names(e, "run.admitted"))) return { kind: "never-placed", at: 0 };
  return undefined;
}

/** What a run that never reached the killed runtime must show: nothing started before `at`, one start after. */
export function checkSentAgain(run: readonly LoggedEvent[], not: NotQueuedAtKill, sharedRunId: string): string[] {
  const out: string[] = [];
  const what = not.kind === "send-failed" ? "its failed send" : "its placement elsewhere";
  if (run.slice(0, not.at).some((e) => e.event.type === "run.started"))
    out.push(`${sharedRunId}: started before its send to the killed runtime failed`);
  if (run.slice(not.at).filter((e) => e.event.type === "run.started").length !== 1)
    out.push(`${sharedRunId}: not started exactly once after ${what}`);
  return out;
}

/**
 * Forensics records each impacted tenant should have: one per killed execution, plus one per run of
 * its that was in the killed runtime's local queue (every other run of the tenant, except those that
 * never reached it: `notQueuedAtKill`). `notQueued` counts those, by kind.
 */
export function recordsExpected(
  log: readonly LoggedEvent[],
  kills: readonly KillRecord[],
  runs: readonly { readonly tenantId: string; readonly sharedRunId: string }[],
): { records: Map<string, number>; notQueued: { sendFailed: number; neverPlaced: number } } {
  const byRun = new Map<string, LoggedEvent[]>();
  const kept = new Set(["run.admitted", "run.dispatch-failed", "run.requeued-for-local-queued-recovery"]);
  for (const e of log) {
    if (!kept.has(e.event.type)) continue;
    const r = runs.find((x) => e.subject.includes(`.run.${x.tenantId}.${x.sharedRunId}.`));
    if (r) byRun.set(`${r.tenantId}/${r.sharedRunId}`, [...(byRun.get(`${r.tenantId}/${r.sharedRunId}`) ?? []), e]);
  }
  const records = new Map<string, number>();
  const notQueued = { sendFailed: 0, neverPlaced: 0 };
  for (const k of kills) {
    const others = runs.filter((x) => x.tenantId === k.tenantId && x.sharedRunId !== k.sharedRunId);
    let queued = 0;
    for (const r of others) {
      const not = notQueuedAtKill(byRun, k, r.sharedRunId);
      if (!not) queued++;
      else if (not.kind === "send-failed") notQueued.sendFailed++;
      else notQueued.neverPlaced++;
    }
    records.set(k.tenantId, (records.get(k.tenantId) ?? 0) + 1 + queued);
  }
  return { records, notQueued };
}
