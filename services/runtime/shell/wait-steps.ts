import { setTimeout as delay } from "node:timers/promises";
import { DroverError, type DataOf, type Step, type StepId } from "../../../contracts/index.ts";
import type { Clock } from "../../../platform/clock.ts";
import type { EventStore } from "../../../streams/types.ts";
import type { OpenedExecution } from "./execution-open.ts";
import type { ExecutionState } from "../../../aggregates/execution.ts";
import { apiSignals, type FoundSignal, type SignalFeeds } from "./signal-feed.ts";
import { UNANSWERED_READ_DELAYS_MS, untilAnswered } from "./unanswered-read.ts";

export type WaitState = ExecutionState["waits"] extends ReadonlyMap<string, infer W> ? W : never;

/** Where a runtime's wait steps read their runs' signals (its subject-scoped store) and learn of new ones. */
export interface WaitSignals {
  readonly store: EventStore;
  readonly feeds: SignalFeeds;
  /** One more read of the run this long after the wait started listening (a lagging replica's answer); default 2 s. */
  readonly recheckMs?: number;
  /** Delays before reading the run again after a read nobody answered; the last repeats (default UNANSWERED_READ_DELAYS_MS). */
  readonly unansweredReadDelaysMs?: readonly number[];
  /** The runtime's log: a read nobody answered is said there (`wait-read-unanswered`). */
  readonly log?: (fields: Record<string, unknown>) => void;
}

/** What the execution is told of its waits: a wait listening (nothing to do until it resolves), and done listening. */
export interface WaitListener {
  listening(stepId: string): void;
  resolving(stepId: string): void;
}

/** The wait state of one execution: the journal's waits (a resumed execution keeps their deadlines). */
export const waitHostOf = (
  opened: OpenedExecution,
  clock: Clock,
  signals: WaitSignals | undefined,
  listener?: WaitListener,
): WaitHost => ({
  opened,
  clock,
  ...(signals ? { signals } : {}),
  waits: new Map(opened.prior.waits),
  ...(listener ? { listener } : {}),
});

export interface WaitHost {
  readonly opened: OpenedExecution;
  readonly clock: Clock;
  readonly signals?: WaitSignals;
  readonly waits: Map<string, WaitState>;
  readonly listener?: WaitListener;
}

/** The longest single timer (setTimeout's limit is 2^31−1 ms); a longer wait re-arms it. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * One wait step (docs/control-flow.md "Waits"): journals `wait-opened` with its deadline (once; a
 * resumed execution keeps it), then listens for the run's signal of its name: the tenant's signal
 * feed delivers each signal as it is stored, one read of the run's history finds a signal stored
 * before, and a timer fires at the journaled deadline. A signal found, or the deadline passed, is
 * journaled as `wait-resolved` before the step settles: the output is the signal's payload, or on
 * timeout the declared default (`continue`) or `wait-timeout` (`fail`). Holds no worker and reads
 * nothing while it waits.
 */
export async function runWait(h: WaitHost, step: Extract<Step, { kind: "wait" }>, signal: AbortSignal) {
  const p = step.params;
  const w = h.waits.get(step.id) ?? (await openWait(h, step.id, p.name, p.timeoutMs));
  if (w.resolved?.by === "timeout") return timedOut(step);
  const s = signalsOf(h);
  const watch = await s.feeds.watch(h.opened.tenantId, h.opened.run.ref.id, p.name);
  try {
    let found = await signalUntilAnswered(h, step.id, p.name, "first", signal);
    if (!found && w.resolved) throw new Error(`wait ${step.id} was resolved by a signal the run no longer holds`);
    if (!found) {
      h.listener?.listening(step.id);
      try {
        found = await untilSignal(h, w.timeoutAt, watch.found, s.recheckMs ?? 2000, step.id, p.name, signal);
      } finally {
        h.listener?.resolving(step.id);
      }
    }
    if (!found) {
      await resolve(h, step.id, p.name, undefined);
      return timedOut(step);
    }
    if (!w.resolved) await resolve(h, step.id, p.name, found);
    return found.event.data.payload;
  } finally {
    watch.close();
  }
}

/** The signal from the feed (or the one re-read), or undefined at the deadline; rejects when aborted. */
async function untilSignal(
  h: WaitHost,
  timeoutAt: number,
  fromFeed: Promise<FoundSignal>,
  recheckMs: number,
  stepId: StepId,
  name: string,
  signal: AbortSignal,
): Promise<FoundSignal | undefined> {
  const stop = new AbortController();
  const both = AbortSignal.any([signal, stop.signal]);
  const deadline = (async () => {
    for (let left = timeoutAt - h.clock.now().getTime(); left > 0; left = timeoutAt - h.clock.now().getTime())
      await delay(Math.min(left, MAX_TIMER_MS), undefined, { signal: both });
    return undefined;
  })();
  const recheck = (async () => {
    await delay(recheckMs, undefined, { signal: both });
    const again = await signalUntilAnswered(h, stepId, name, "recheck", both);
    return again ?? new Promise<never>(() => undefined);
  })();
  const aborted = new Promise<never>((_, fail) => {
    if (signal.aborted) fail(signal.reason);
    signal.addEventListener("abort", () => fail(signal.reason), { once: true, signal: stop.signal });
  });
  try {
    return await Promise.race([fromFeed, deadline, recheck, aborted]);
  } finally {
    stop.abort();
    for (const p of [deadline, recheck, aborted]) p.catch(() => undefined);
  }
}

const signalsOf = (h: WaitHost): WaitSignals => {
  if (!h.signals)
    throw new DroverError("step-non-retryable", "this runtime reads no run signals", { retryable: false });
  return h.signals;
};

async function openWait(h: WaitHost, stepId: StepId, name: string, timeoutMs: number): Promise<WaitState> {
  const timeoutAt = h.clock.now().getTime() + timeoutMs;
  await h.opened.exec.append(
    h.opened.emit("exec.wait-opened", { stepId, name, timeoutAt: new Date(timeoutAt).toISOString() }),
  );
  const w = { timeoutAt };
  h.waits.set(stepId, w);
  return w;
}

/** The run's first signal of `name`, written by the API (the only writer its NATS rights allow). */
async function signalOf(h: WaitHost, name: string): Promise<FoundSignal | undefined> {
  const stored = await apiSignals(signalsOf(h).store, h.opened.tenantId, h.opened.run.ref.id);
  return stored.find((s) => s.event.data.name === name);
}

/**
 * `signalOf`, read again until it is answered: a read nobody answered (`event-store-unavailable`,
 * retryable: no history responder while the provisioner restarts, NATS down) is an outage the wait
 * outlasts, not a failure of its step. Failed, it cost the run its step's attempt (one by default):
 * at load 15–25 the read 2 s after the wait began listening met the e2e's provisioner restarting, and
 * the run failed (test/host/runtime-waits-history-outage.host.test.ts). A refused read (its rights, a
 * malformed request) still fails the step. Rejects when `signal` aborts.
 */
async function signalUntilAnswered(
  h: WaitHost,
  stepId: StepId,
  name: string,
  read: "first" | "recheck",
  signal: AbortSignal,
): Promise<FoundSignal | undefined> {
  const s = signalsOf(h);
  return untilAnswered(
    () => signalOf(h, name),
    s.unansweredReadDelaysMs ?? UNANSWERED_READ_DELAYS_MS,
    signal,
    (u) => s.log?.({ event: "wait-read-unanswered", executionId: h.opened.executionId, stepId, read, ...u }),
  );
}

async function resolve(h: WaitHost, stepId: StepId, name: string, s: FoundSignal | undefined): Promise<void> {
  const data: DataOf<"exec.wait-resolved"> = s
    ? {
        stepId,
        name,
        by: "signal",
        principal: s.event.data.by,
        payloadDigest: s.event.data.payloadDigest,
        signalSeq: s.seq,
        ...(s.event.data.signalId === undefined ? {} : { signalId: s.event.data.signalId }),
      }
    : { stepId, name, by: "timeout" };
  await h.opened.exec.append(h.opened.emit("exec.wait-resolved", data));
  const w = h.waits.get(stepId);
  if (w) h.waits.set(stepId, { ...w, resolved: data });
}

function timedOut(step: Extract<Step, { kind: "wait" }>): unknown {
  const p = step.params;
  if (p.onTimeout === "continue") return p.defaultOutput ?? null;
  throw new DroverError("wait-timeout", `wait ${step.id} ("${p.name}") had no signal within ${p.timeoutMs} ms`, {
    retryable: false,
  });
}
