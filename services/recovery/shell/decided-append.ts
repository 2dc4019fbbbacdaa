import { isDroverError, type DroverEvent } from "../../../contracts/index.ts";
import { runtimeRef } from "../../../streams/index.ts";
import { fenceStillDecided } from "../domain/fence-append.ts";
import type { RuntimeRecord } from "../domain/runtime-health.ts";
import type { RecoveryDeps } from "./deps.ts";

/** Host observations of one kill: container terminated, Pod failed, Pod deleted (each at most once). */
const MAX_OBSERVATION_CONFLICTS = 4;

/**
 * Appends a decision about runtime `rt` (its fence, its recovery plan), expecting the sequence the
 * decision was based on: if anything was appended since (another replica's plan or fence), the
 * append conflicts rather than repeating it. With `passObservations`, one exception: the
 * provisioner records what its host watch saw of the fence's kill (`host-exited` of the runtime's
 * incarnation: container terminated, Pod failed, Pod deleted), which changes nothing decided, so the
 * decision goes on top of those (domain/fence-append.ts). Dropped, the next pass decided again: a
 * whole pass, and a second kill on a real node. When this replica has already folded such
 * observations (and nothing else) since the decision, the append expects the sequence after them
 * rather than conflicting first and reading the log (0.1–2.4 s at load ~20 on a real node, where nine
 * fences in ten met one). Applied to the state once appended.
 */
export async function appendDecided(
  deps: RecoveryDeps,
  rt: RuntimeRecord,
  event: DroverEvent,
  passObservations: boolean,
): Promise<
  { readonly seq: number; readonly conflicts: number } | { readonly dropped: string; readonly conflicts: number }
> {
  const ref = runtimeRef(rt.runtimeInstanceId);
  const incarnation = rt.host?.hostIncarnation;
  const now = deps.state.runtimes.get(rt.runtimeInstanceId);
  let expectedSeq =
    passObservations && now?.decidedSeq !== undefined && now.decidedSeq <= rt.lastSeq
      ? Math.max(now.lastSeq, rt.lastSeq)
      : rt.lastSeq;
  for (let conflicts = 0; ; conflicts++) {
    try {
      const a = await deps.store.append(ref, event, { expectedSeq });
      const subject = `${deps.layout.eventPrefix}.runtime.${rt.runtimeInstanceId}.${event.type.split(".")[1]}`;
      deps.state.applyOwn(subject, event, a.seq);
      return { seq: a.seq, conflicts };
    } catch (e) {
      if (!isDroverError(e, "version-conflict")) throw e;
      if (!passObservations || !incarnation || conflicts >= MAX_OBSERVATION_CONFLICTS)
        return { dropped: "the runtime's log moved since the decision", conflicts };
      const h = await deps.store.read(ref);
      const since = h.events.filter((s) => s.seq > expectedSeq).map((s) => s.event);
      if (!fenceStillDecided(since, incarnation))
        return { dropped: "another decision was appended meanwhile", conflicts };
      expectedSeq = h.lastSeq;
    }
  }
}
