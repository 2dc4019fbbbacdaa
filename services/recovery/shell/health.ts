import { isDroverError } from "../../../contracts/index.ts";
import { envelope } from "../../../platform/envelope.ts";
import { runtimeRef } from "../../../streams/index.ts";
import { controlPlaneOf, suspicion, type RuntimeRecord } from "../domain/runtime-health.ts";
import { budgetSuspicions, type Candidate, type Held } from "../domain/suspicion-budget.ts";
import { incidentIdOf, type RecoveryDeps } from "./deps.ts";

/**
 * Health: turns the first failure signal of each live runtime of this control plane into
 * `runtime suspected` (conditional on the runtime's sequence, so replicas converge on one). Capacity
 * folds it as unschedulable at once. A missing heartbeat counts only past the staleness bound, and
 * only from `viewLiveSinceMs` on (this replica's start or its last NATS reconnect), and heartbeat
 * silence alone suspects at most `maxStaleSuspicionShare` of the live runtimes at once
 * ({@link budgetSuspicions}); the runtimes held back are returned (the caller logs and counts them).
 */
export async function detect(
  deps: RecoveryDeps,
  now: number,
  staleMs: number,
  viewLiveSinceMs = 0,
  /** Folds the stream's own last beat of a runtime into the state (a direct read, not the follower). */
  latestBeat?: (runtimeInstanceId: string) => Promise<void>,
  /** Runtimes whose connection is lost, with the evidence (connection-lost.ts). */
  lost: ReadonlyMap<string, string> = new Map(),
): Promise<readonly Held[]> {
  // A runtime seen again after a drop and not read back yet is no one's to judge (shell/retired-bound.ts).
  const ours = [...deps.state.runtimes.values()].filter(
    (rt) =>
      controlPlaneOf(rt) === deps.config.controlPlaneId && !deps.state.retired.unverified.has(rt.runtimeInstanceId),
  );
  const check = (rt: RuntimeRecord) =>
    suspicion(
      rt,
      deps.state.lastBeatMs.get(rt.runtimeInstanceId),
      now,
      staleMs,
      viewLiveSinceMs,
      deps.config.fenceDeadlineMs,
      lost.get(rt.runtimeInstanceId),
      deps.state.drainingBeatMs.get(rt.runtimeInstanceId),
    );
  const first = ours.map((rt) => ({ rt, why: check(rt) }));
  // A death the host proved (process exited, Pod deleted) is never held by the budget and needs no
  // read: its suspicion is appended at once, not after the other runtimes' heartbeat reads and their
  // budget (under load those reads held a SIGKILLed runtime's suspicion, and so its fence, back).
  const proven = first.flatMap(({ rt, why }) =>
    why && (why.code === "host-exited" || why.code === "pod-deleted")
      ? [suspect1(deps, rt, { runtimeInstanceId: rt.runtimeInstanceId, ...why })]
      : [],
  );
  const provenDone = Promise.all(proven);
  provenDone.catch(() => undefined); // surfaced by the await below, not as an unhandled rejection meanwhile
  // Each silent runtime is judged on its own: the stale ones' stream reads, then the suspicions'
  // appends (each conditional on its own runtime), go side by side. One after another, the last of a
  // burst waited for every earlier one's round trip before it was even suspected.
  const judged = await Promise.all(
    first
      .filter(({ why }) => why?.code === "heartbeat-stale")
      .map(async ({ rt }): Promise<Candidate | undefined> => {
        let why = check(rt);
        // Silence as this replica's follower sees it: the stream itself has the last word.
        if (why?.code === "heartbeat-stale" && latestBeat) {
          await latestBeat(rt.runtimeInstanceId);
          why = check(rt);
        }
        return why && { runtimeInstanceId: rt.runtimeInstanceId, ...why };
      }),
  );
  // A lost connection needs no read (its evidence is a refused connect) but is budgeted like silence.
  const lostNow = first.flatMap(({ rt, why }): Candidate[] =>
    why?.code === "connection-lost" ? [{ runtimeInstanceId: rt.runtimeInstanceId, ...why }] : [],
  );
  const candidates = [...lostNow, ...judged.filter((c): c is Candidate => c !== undefined)];
  const { suspect, held } = budgetSuspicions(ours, candidates, deps.config.maxStaleSuspicionShare);
  // Each append expects the sequence its runtime was judged at: anything folded since conflicts it.
  const judgedAt = new Map<string, RuntimeRecord>(ours.map((rt) => [rt.runtimeInstanceId, rt]));
  await Promise.all([provenDone, ...suspect.map((c) => suspect1(deps, judgedAt.get(c.runtimeInstanceId)!, c))]);
  return held;
}

/** Appends `rt`'s `suspected`, conditional on its record's sequence (a conflict: something else was first). */
async function suspect1(deps: RecoveryDeps, rt: RuntimeRecord, c: Candidate): Promise<void> {
  const incidentId = incidentIdOf(deps, rt.runtimeInstanceId);
  const reason = { code: c.code, detail: c.detail };
  const event = envelope(
    deps.env,
    "runtime.suspected",
    { incidentId, reason, hostIncarnation: rt.host!.hostIncarnation },
    { correlationId: incidentId, causationId: `health:${rt.runtimeInstanceId}` },
  );
  try {
    const a = await deps.store.append(runtimeRef(rt.runtimeInstanceId), event, { expectedSeq: rt.lastSeq });
    deps.state.applyOwn(`${deps.layout.eventPrefix}.runtime.${rt.runtimeInstanceId}.suspected`, event, a.seq);
    deps.log.warn({ runtime: rt.runtimeInstanceId, incidentId, reason }, "runtime suspected");
  } catch (e) {
    if (!isDroverError(e, "version-conflict")) throw e;
  }
}
