import type { AssertionResult, LoggedEvent } from "./assertions.ts";

/** How many keys `keyOf` gives more than once, and the first few of them. */
function repeated(log: readonly LoggedEvent[], keyOf: (e: LoggedEvent) => string | undefined) {
  const seen = new Map<string, number>();
  for (const e of log) {
    const k = keyOf(e);
    if (k !== undefined) seen.set(k, (seen.get(k) ?? 0) + 1);
  }
  const twice = [...seen].filter(([, n]) => n > 1);
  return { total: seen.size, twice: twice.length, examples: twice.slice(0, 3).map(([k, n]) => `${k} ×${n}`) };
}

function result(name: string, what: string, r: ReturnType<typeof repeated>): AssertionResult {
  return {
    name,
    ok: r.twice === 0 && r.total > 0,
    violations: r.twice + (r.total === 0 ? 1 : 0),
    detail:
      r.total === 0
        ? `no ${what} in the log`
        : r.twice === 0
          ? `${r.total} ${what}, each decided once`
          : `${r.twice} of ${r.total} ${what} decided more than once: ${r.examples.join(", ")}`,
  };
}

/**
 * With several replicas of every service (issue 16), no decision is taken twice: one `run.admitted`
 * and one `run.dispatched` per placement (a run and the LocalRunId it was given), one
 * `runtime.fenced` per host incarnation (one per incident). A replica that repeats a decision another
 * made shows up here, whatever the run's outcome.
 */
export function decisionsOnce(log: readonly LoggedEvent[]): AssertionResult[] {
  const placement = (type: string) => (e: LoggedEvent) =>
    e.event.type === type && "localRunId" in e.event.data
      ? `${e.event.correlationId}/${String(e.event.data.localRunId)}`
      : undefined;
  return [
    result("decisions: one admission per placement", "placements admitted", repeated(log, placement("run.admitted"))),
    result(
      "decisions: one dispatch per placement",
      "placements dispatched",
      repeated(log, placement("run.dispatched")),
    ),
    result(
      "decisions: one fence per incident",
      "incarnations fenced",
      repeated(log, (e) => (e.event.type === "runtime.fenced" ? e.event.data.hostIncarnation : undefined)),
    ),
  ];
}
