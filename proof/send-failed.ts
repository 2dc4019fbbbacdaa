import type { KillRecord, LoggedEvent } from "./assertions.ts";

/**
 * The runs the proof expected in a killed runtime's local queue but whose dispatch to it failed
 * (`run.dispatch-failed` naming that runtime) and that recovery therefore never planned as
 * local-queued work: admission records `run.dispatched` before it sends, and a send that meets the
 * dead runtime (or, on a NATS cluster electing a leader, a send still in flight at the kill) fails
 * and the run is placed again as ordinary queued work. Such a run never reached the runtime: it is
 * classified by what the log shows, and checked as that (never started before the failure, started
 * once after it), instead of being counted as a missing local-queued recovery.
 */
export function sendFailedAtKill(
  byRun: ReadonlyMap<string, readonly LoggedEvent[]>,
  k: KillRecord,
  sharedRunId: string,
): { failedAt: number } | undefined {
  const run = byRun.get(`${k.tenantId}/${sharedRunId}`) ?? [];
  if (run.some((e) => e.event.type === "run.requeued-for-local-queued-recovery")) return undefined;
  const failedAt = run.findIndex(
    (e) => e.event.type === "run.dispatch-failed" && e.event.data.runtimeInstanceId === k.runtimeInstanceId,
  );
  return failedAt < 0 ? undefined : { failedAt };
}

/** What a run queued again after a failed send must show: nothing started before, one start after. */
export function checkSentAgain(run: readonly LoggedEvent[], failedAt: number, sharedRunId: string): string[] {
  const out: string[] = [];
  if (run.slice(0, failedAt).some((e) => e.event.type === "run.started"))
    out.push(`${sharedRunId}: started before its send to the killed runtime failed`);
  if (run.slice(failedAt).filter((e) => e.event.type === "run.started").length !== 1)
    out.push(`${sharedRunId}: not started exactly once after its failed send`);
  return out;
}

/**
 * Forensics records each impacted tenant should have: one per killed execution, plus one per run of
 * its that was in the killed runtime's local queue (every other run of the tenant, except those whose
 * send failed: `sendFailedAtKill`).
 */
export function recordsExpected(
  log: readonly LoggedEvent[],
  kills: readonly KillRecord[],
  runs: readonly { readonly tenantId: string; readonly sharedRunId: string }[],
): Map<string, number> {
  const byRun = new Map<string, LoggedEvent[]>();
  for (const e of log) {
    if (e.event.type !== "run.dispatch-failed" && e.event.type !== "run.requeued-for-local-queued-recovery") continue;
    const r = runs.find((x) => e.subject.includes(`.run.${x.tenantId}.${x.sharedRunId}.`));
    if (r) byRun.set(`${r.tenantId}/${r.sharedRunId}`, [...(byRun.get(`${r.tenantId}/${r.sharedRunId}`) ?? []), e]);
  }
  const out = new Map<string, number>();
  for (const k of kills) {
    const others = runs.filter((x) => x.tenantId === k.tenantId && x.sharedRunId !== k.sharedRunId);
    const queued = others.filter((r) => !sendFailedAtKill(byRun, k, r.sharedRunId)).length;
    out.set(k.tenantId, (out.get(k.tenantId) ?? 0) + 1 + queued);
  }
  return out;
}
