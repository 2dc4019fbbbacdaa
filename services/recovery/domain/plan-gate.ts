import type { RuntimeRecord } from "./runtime-health.ts";

/**
 * Whether recovery may plan a fenced (or stopped) runtime's items from its fold: only once its
 * follower has folded the log up to the runtime's last event (the fence it appended itself and
 * applied at once included). Every `run.admitted`/`dispatched` naming the runtime that was stored
 * before the fence is then in the inventory; planned earlier, a lagging follower would leave such a
 * run out of the plan (appended once), and admission would wait on it for ever.
 */
export function foldedUpToRuntime(rt: Pick<RuntimeRecord, "lastSeq">, followedSeq: number): boolean {
  return followedSeq >= rt.lastSeq;
}
