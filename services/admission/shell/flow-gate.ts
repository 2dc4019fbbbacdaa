import { isDroverError, SharedRunId, TenantId, type Reason, type TenantSettings } from "../../../contracts/index.ts";
import { isTerminal } from "../../../aggregates/run.ts";
import { envelope } from "../../../platform/envelope.ts";
import { flowKeyRef } from "../../../streams/index.ts";
import {
  decideKey,
  emptyFlowKey,
  evolveFlowKey,
  runKeys,
  type FlowKeyState,
  type RunKey,
} from "../domain/flow-keys.ts";
import type { AdmissionDeps } from "./deps.ts";
import type { IndexedRun } from "./run-index.ts";

/** How often one run retries a key whose aggregate moved under it, within one decision. */
const MAX_TRIES = 6;

/**
 * What admission knows of flow key aggregates: a cache of their folds (filled by reading the key's
 * history, kept by its own appends, re-read on every conflict), a per-key lock so this replica's
 * parallel placements take turns, and the pass's held priorities. The cache is never trusted for a
 * decision: every acquisition is an append conditional on the sequence the decision was made on.
 */
export class FlowKeys {
  private readonly states = new Map<string, FlowKeyState>();
  private readonly locks = new Map<string, Promise<unknown>>();
  /** `<tenant>/<keyId>` → the highest priority held back on the key in the current pass. */
  held = new Map<string, number>();

  state(id: string): FlowKeyState | undefined {
    return this.states.get(id);
  }
  set(id: string, s: FlowKeyState): void {
    this.states.set(id, s);
  }
  /** Runs `f` after every earlier call for the same key (a promise chain per key). */
  async locked<T>(id: string, f: () => Promise<T>): Promise<T> {
    const before = this.locks.get(id) ?? Promise.resolve();
    const run = before.then(f, f);
    const tail = run.catch(() => undefined);
    this.locks.set(id, tail);
    try {
      return await run;
    } finally {
      if (this.locks.get(id) === tail) this.locks.delete(id);
    }
  }
}

export const flowKeyIdOf = (deps: AdmissionDeps, tenantId: string, k: RunKey): string =>
  `fk-${deps.sha256(`${tenantId}\u0000${k.setting.name}\u0000${k.value}`).slice(0, 24)}`;

/**
 * Takes every flow key the run falls under (in name order), or says why it waits (the first key it
 * cannot take). Keys taken stay taken while the run waits for another: they are released when the
 * run ends, like every holder's. Recovery items and runs without keys pass untouched.
 */
export async function takeFlowKeys(
  deps: AdmissionDeps,
  keys: FlowKeys,
  r: IndexedRun,
  tenant: TenantSettings,
  now: number,
): Promise<{ readonly ok: true } | { readonly ok: false; readonly reason: Reason }> {
  if (tenant.flowKeys.length === 0 || r.state.recoveryPending) return { ok: true };
  const priority = Math.min(r.state.priority ?? 0, tenant.maxRunPriority);
  for (const k of runKeys(tenant.flowKeys, { input: r.state.input, labels: r.state.labels })) {
    const id = flowKeyIdOf(deps, r.tenantId, k);
    const reason = await keys.locked(id, () => takeOne(deps, keys, r, k, id, priority, now));
    if (reason) {
      const heldKey = `${r.tenantId}/${id}`;
      keys.held.set(heldKey, Math.max(keys.held.get(heldKey) ?? 0, priority));
      return { ok: false, reason };
    }
  }
  return { ok: true };
}

async function takeOne(
  deps: AdmissionDeps,
  keys: FlowKeys,
  r: IndexedRun,
  k: RunKey,
  id: string,
  priority: number,
  now: number,
): Promise<Reason | undefined> {
  const ref = flowKeyRef(r.tenantId, id);
  const ended = (runId: string) => {
    const s = deps.index.get(r.tenantId, runId)?.state.status;
    return s !== undefined && isTerminal(s);
  };
  for (let attempt = 1; attempt <= MAX_TRIES; attempt++) {
    const state = keys.state(id) ?? (await reload(deps, keys, r.tenantId, id));
    const d = decideKey(
      k,
      state,
      { sharedRunId: r.sharedRunId, priority },
      now,
      ended,
      keys.held.get(`${r.tenantId}/${id}`),
    );
    if (d.kind === "holds") return undefined;
    if (d.kind === "wait") return d.reason;
    const data = {
      name: k.setting.name,
      key: k.value,
      sharedRunId: SharedRunId.parse(r.sharedRunId),
      at: new Date(now).toISOString(),
      ...(d.tatMs === undefined ? {} : { tat: new Date(d.tatMs).toISOString() }),
      inFlight: d.inFlight,
    };
    const event = envelope(deps.env, "flowkey.acquired", data, {
      tenantId: TenantId.parse(r.tenantId),
      correlationId: r.sharedRunId,
      causationId: `flow:${r.sharedRunId}:${r.state.lastSeq}`,
    });
    try {
      const a = await deps.store.append(ref, event, { expectedSeq: state.lastSeq });
      keys.set(id, evolveFlowKey(state, data, a.seq));
      return undefined;
    } catch (e) {
      if (!isDroverError(e, "version-conflict")) throw e;
    }
    // Another replica took the key (or the cache was behind): read what is there and decide again.
    await reload(deps, keys, r.tenantId, id);
  }
  return { code: "waiting-for-key", detail: `waiting-for-key ${k.value}: contended; retried next pass` };
}

async function reload(deps: AdmissionDeps, keys: FlowKeys, tenantId: string, id: string): Promise<FlowKeyState> {
  const history = await deps.store.read(flowKeyRef(tenantId, id));
  let s = emptyFlowKey();
  for (const e of history.events) if (e.event.type === "flowkey.acquired") s = evolveFlowKey(s, e.event.data, e.seq);
  s = { ...s, lastSeq: history.lastSeq };
  keys.set(id, s);
  return s;
}
