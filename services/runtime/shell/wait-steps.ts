import { setTimeout as delay } from "node:timers/promises";
import { DroverError, type DataOf, type DroverEvent, type Step, type StepId } from "../../../contracts/index.ts";
import type { Clock } from "../../../platform/clock.ts";
import { runRef } from "../../../streams/subjects.ts";
import type { EventStore } from "../../../streams/types.ts";
import type { OpenedExecution } from "./execution-open.ts";
import type { ExecutionState } from "../../../aggregates/execution.ts";

export type WaitState = ExecutionState["waits"] extends ReadonlyMap<string, infer W> ? W : never;

/** Where a runtime's wait steps read their runs' signals (its subject-scoped store), and how often. */
export interface WaitSignals {
  readonly store: EventStore;
  readonly pollMs?: number;
}

/** The wait state of one execution: the journal's waits (a resumed execution keeps their deadlines). */
export const waitHostOf = (opened: OpenedExecution, clock: Clock, signals: WaitSignals | undefined): WaitHost => ({
  opened,
  clock,
  ...(signals ? { store: signals.store } : {}),
  waits: new Map(opened.prior.waits),
  pollMs: signals?.pollMs ?? 500,
});

export interface WaitHost {
  readonly opened: OpenedExecution;
  readonly clock: Clock;
  /** Reads the run's `signal-received` events (the runtime's subject-scoped store). */
  readonly store?: EventStore;
  readonly waits: Map<string, WaitState>;
  /** How often a waiting step looks for its signal (the run's last sequence, then its history when it moved). */
  readonly pollMs: number;
}

type Signal = Extract<DroverEvent, { type: "run.signal-received" }>;

/**
 * One wait step (docs/control-flow.md "Waits"): journals `wait-opened` with its deadline (once; a
 * resumed execution keeps it), then looks for the run's signal of its name until the deadline. A
 * signal found, or the deadline passed, is journaled as `wait-resolved` before the step settles: the
 * output is the signal's payload, or on timeout the declared default (`continue`) or `wait-timeout`
 * (`fail`). Holds no worker: the loop only reads the run's last sequence every `pollMs`.
 */
export async function runWait(h: WaitHost, step: Extract<Step, { kind: "wait" }>, signal: AbortSignal) {
  const p = step.params;
  const w = h.waits.get(step.id) ?? (await openWait(h, step.id, p.name, p.timeoutMs));
  if (w.resolved?.by === "timeout") return timedOut(step);
  let seen = -1;
  for (;;) {
    signal.throwIfAborted();
    const last = await runStore(h).lastSeq(runRef(h.opened.tenantId, h.opened.run.ref.id));
    if (last !== seen) {
      seen = last;
      const found = await signalOf(h, p.name);
      if (found) {
        if (!w.resolved) await resolve(h, step.id, p.name, found);
        return found.event.data.payload;
      }
    }
    if (w.resolved) throw new Error(`wait ${step.id} was resolved by a signal the run no longer holds`);
    const left = w.timeoutAt - h.clock.now().getTime();
    if (left <= 0) {
      await resolve(h, step.id, p.name, undefined);
      return timedOut(step);
    }
    await delay(Math.min(h.pollMs, left), undefined, { signal });
  }
}

const runStore = (h: WaitHost): EventStore => {
  if (!h.store) throw new DroverError("step-non-retryable", "this runtime reads no run signals", { retryable: false });
  return h.store;
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
async function signalOf(h: WaitHost, name: string): Promise<{ seq: number; event: Signal } | undefined> {
  const history = await runStore(h).read(runRef(h.opened.tenantId, h.opened.run.ref.id), { skipUndecodable: true });
  for (const e of history.events)
    if (e.event.type === "run.signal-received" && e.event.data.name === name && e.event.writer.service === "api")
      return { seq: e.seq, event: e.event };
  return undefined;
}

async function resolve(
  h: WaitHost,
  stepId: StepId,
  name: string,
  s: { seq: number; event: Signal } | undefined,
): Promise<void> {
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
