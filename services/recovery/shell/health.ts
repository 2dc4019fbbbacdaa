import { isDroverError } from "../../../contracts/index.ts";
import { envelope } from "../../../platform/envelope.ts";
import { runtimeRef } from "../../../streams/index.ts";
import { suspicion } from "../domain/runtime-health.ts";
import { incidentIdOf, type RecoveryDeps } from "./deps.ts";

/**
 * Health: turns the first failure signal of each live runtime of this control plane into
 * `runtime suspected` (conditional on the runtime's sequence, so replicas converge on one). Capacity
 * folds it as unschedulable at once. A missing heartbeat counts only past the staleness bound, and
 * only from `viewLiveSinceMs` on (this replica's start or its last NATS reconnect).
 */
export async function detect(
  deps: RecoveryDeps,
  now: number,
  staleMs: number,
  viewLiveSinceMs = 0,
  /** Folds the stream's own last beat of a runtime into the state (a direct read, not the follower). */
  latestBeat?: (runtimeInstanceId: string) => Promise<void>,
): Promise<void> {
  for (const rt of deps.state.runtimes.values()) {
    if (rt.registration?.controlPlaneId !== deps.config.controlPlaneId) continue;
    const check = () => suspicion(rt, deps.state.lastBeatMs.get(rt.runtimeInstanceId), now, staleMs, viewLiveSinceMs);
    let why = check();
    // Silence as this replica's follower sees it: the stream itself has the last word.
    if (why?.code === "heartbeat-stale" && latestBeat) {
      await latestBeat(rt.runtimeInstanceId);
      why = check();
    }
    if (!why) continue;
    const incidentId = incidentIdOf(deps, rt.runtimeInstanceId);
    const event = envelope(
      deps.env,
      "runtime.suspected",
      { incidentId, reason: why, hostIncarnation: rt.host!.hostIncarnation },
      { correlationId: incidentId, causationId: `health:${rt.runtimeInstanceId}` },
    );
    try {
      const a = await deps.store.append(runtimeRef(rt.runtimeInstanceId), event, { expectedSeq: rt.lastSeq });
      deps.state.applyOwn(`${deps.layout.eventPrefix}.runtime.${rt.runtimeInstanceId}.suspected`, event, a.seq);
      deps.log.warn({ runtime: rt.runtimeInstanceId, incidentId, reason: why }, "runtime suspected");
    } catch (e) {
      if (!isDroverError(e, "version-conflict")) throw e;
    }
  }
}
