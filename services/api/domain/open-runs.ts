/**
 * The tenant's unfinished runs, folded from run event subjects alone
 * (`<prefix>.run.<tenant>.<sharedRunId>.<event>`): the API's quota check needs no payload, so it
 * decodes none. Idempotent by stream sequence: an event at or below the last folded sequence is
 * ignored, so a redelivered or replayed message never counts twice.
 *
 * The state is mutated in place (still no IO, still deterministic): copying a tenant's set on every
 * event would make a long replay quadratic.
 */
export interface OpenRuns {
  lastSeq: number;
  /** tenant → runs submitted and not yet terminal. */
  readonly open: Map<string, Set<string>>;
  /**
   * tenant → runs that reached a terminal event, at most `maxClosed` in all (the first to close leave
   * first): a late duplicate `submitted` of one of them never reopens it. One that left is checked
   * against the log by the shell before its `submitted` is folded (`isLateDuplicate`).
   */
  readonly closed: Map<string, Set<string>>;
  /** Closed runs in memory in the order they closed (`<tenant> <runId>`). */
  readonly closedOrder: Set<string>;
  /** Closed runs that left memory so far: from the first, an unknown run's `submitted` may be a late duplicate. */
  dropped: number;
  /** tenant → open runs that have not `started` yet (the tenant's queue, capped by maxQueuedRuns). */
  readonly waiting: Map<string, Set<string>>;
  /** tenant → runs that have `started` once; a late `submitted` never puts one back in the queue. */
  readonly started: Map<string, Set<string>>;
}

/** Run events after which a run no longer counts against the quota (aggregates/run.ts `isTerminal`). */
const TERMINAL = new Set(["completed", "failed", "cancelled", "rejected"]);

/**
 * The run events (names after `run.`) that move the counts: every other run event only advances
 * the sequence, so a projection may have the server send it these alone (3 of a run's 5 events on
 * its happy path: not `admitted`, `dispatched`).
 */
export const OPEN_RUN_EVENTS: readonly string[] = ["submitted", "started", ...TERMINAL];

/** The state before any event: no tenant has an open run. */
export const emptyOpenRuns = (): OpenRuns => ({
  lastSeq: 0,
  open: new Map(),
  closed: new Map(),
  closedOrder: new Set(),
  dropped: 0,
  waiting: new Map(),
  started: new Map(),
});

const setOf = (m: Map<string, Set<string>>, k: string): Set<string> => {
  let s = m.get(k);
  if (s === undefined) m.set(k, (s = new Set()));
  return s;
};

/** The run is open or closed in memory (its `submitted`, if it has one, is folded). */
export const isKnownRun = (s: OpenRuns, tenant: string, runId: string): boolean =>
  !!s.open.get(tenant)?.has(runId) || !!s.closed.get(tenant)?.has(runId);

/**
 * Folds one event given its subject tokens after the prefix: `run`, tenant, id, event name.
 * Any other subject only advances the sequence. Beyond `maxClosed` (undefined: no bound) closed
 * runs leave memory, the first to close first: the quota counts open runs only, so none of them
 * counts; what they still guard (a late duplicate `submitted`) the shell checks against the log.
 */
export function foldOpenRunEvent(s: OpenRuns, seq: number, tokens: readonly string[], maxClosed?: number): void {
  if (seq <= s.lastSeq) return;
  s.lastSeq = seq;
  const [aggregate, tenant, runId, name] = tokens;
  if (aggregate !== "run" || tokens.length !== 4 || tenant === undefined || runId === undefined || name === undefined)
    return;
  if (name === "submitted") {
    if (s.closed.get(tenant)?.has(runId)) return;
    setOf(s.open, tenant).add(runId);
    if (!s.started.get(tenant)?.has(runId)) setOf(s.waiting, tenant).add(runId);
  } else if (name === "started") {
    s.waiting.get(tenant)?.delete(runId);
    setOf(s.started, tenant).add(runId);
  } else if (TERMINAL.has(name)) {
    s.open.get(tenant)?.delete(runId);
    s.waiting.get(tenant)?.delete(runId);
    s.started.get(tenant)?.delete(runId);
    setOf(s.closed, tenant).add(runId);
    s.closedOrder.add(`${tenant} ${runId}`);
    boundClosed(s, maxClosed);
  }
}

/** Drops the closed runs that closed first until at most `maxClosed` remain. */
export function boundClosed(s: OpenRuns, maxClosed: number | undefined): void {
  if (maxClosed === undefined) return;
  for (const key of s.closedOrder) {
    if (s.closedOrder.size <= maxClosed) break;
    s.closedOrder.delete(key);
    const [tenant, runId] = key.split(" ") as [string, string];
    const ids = s.closed.get(tenant);
    ids?.delete(runId);
    if (ids?.size === 0) s.closed.delete(tenant);
    s.dropped++;
  }
}

/** The tenant's runs submitted and neither started nor terminal, as of `lastSeq`. */
export const waitingRunCount = (s: OpenRuns, tenantId: string): number => s.waiting.get(tenantId)?.size ?? 0;

/** The tenant's runs submitted and not yet terminal, as of `lastSeq`. */
export const openRunCount = (s: OpenRuns, tenantId: string): number => s.open.get(tenantId)?.size ?? 0;

/** Runs submitted and neither started nor terminal, per tenant (tenants with none left out), as of `lastSeq`. */
export function queueDepths(s: OpenRuns): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [tenant, runs] of [...s.waiting].sort(([a], [b]) => (a < b ? -1 : 1)))
    if (runs.size > 0) out[tenant] = runs.size;
  return out;
}
