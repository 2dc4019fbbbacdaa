import { envelope } from "../../../platform/envelope.ts";
import type { HostStrategy } from "../../../platform/hosts/types.ts";
import { hostProviderOf, type RuntimeRecord } from "../domain/runtime-health.ts";
import { appendDecided } from "./decided-append.ts";
import type { RecoveryDeps } from "./deps.ts";
import { requestReplacements } from "./replace.ts";

/**
 * Fence: asks the host strategy to kill the exact incarnation and waits for the boundary (process
 * reaped / Pod UID gone), then appends `runtime fenced` with the proof. If the boundary is not proven
 * by the deadline, `fence-failed` (fence-timeout) is recorded, the incident stays open and no work
 * moves; the next pass tries again. A host this replica cannot see (a process host of another
 * machine or PID namespace) is never concluded gone: `fence-failed` (host-out-of-reach), no work moves.
 */
export async function fence(deps: RecoveryDeps, rt: RuntimeRecord): Promise<void> {
  const strategy = fencerOf(deps, rt);
  if (!strategy || !rt.host || !rt.suspected) return;
  const incidentId = rt.suspected.incidentId;
  const host = {
    hostIncarnation: rt.host.hostIncarnation,
    ...(rt.host.pid ? { pid: rt.host.pid } : {}),
    ...(rt.host.podUid ? { podUid: rt.host.podUid } : {}),
    ...(rt.host.podName ? { podName: rt.host.podName } : {}),
    ...(rt.host.namespace ? { namespace: rt.host.namespace } : {}),
    ...(rt.host.node ? { node: rt.host.node } : {}),
  };
  // Side by side with the kill and the pause: starting a runtime moves no work, and a suspected
  // runtime never serves again (its lifecycle only moves forward), fenced or not (replace.ts).
  void requestReplacements(deps, rt, incidentId).catch((e: unknown) =>
    deps.log.warn({ runtime: rt.runtimeInstanceId, err: String(e) }, "early replacement request failed"),
  );
  // Where the fence's time goes (in its log line): the kill's own steps, then the append.
  const t0 = performance.now();
  // A lost connection is evidence the runtime is dead already (connection-lost.ts): a Pod is then
  // ended by its grace-0 delete at once, not after its kubelet's report of the exit (pod-kill.ts).
  const lost = rt.suspected.reason.code === "connection-lost";
  const result = await strategy.kill(
    rt.runtimeInstanceId,
    host,
    deps.config.fenceDeadlineMs,
    // The proof's observedBy (≤ 100 characters) names it; the evidence itself is in the suspicion.
    lost ? { exitEvidence: "its connection was lost" } : {},
  );
  const killMs = Math.round(performance.now() - t0);
  const event =
    result.outcome === "killed"
      ? envelope(
          deps.env,
          "runtime.fenced",
          { incidentId, hostIncarnation: rt.host.hostIncarnation, proof: result.proof },
          { correlationId: incidentId, causationId: `fence:${incidentId}` },
        )
      : envelope(
          deps.env,
          "runtime.fence-failed",
          {
            incidentId,
            hostIncarnation: rt.host.hostIncarnation,
            reason: {
              code: result.outcome === "out-of-reach" ? "host-out-of-reach" : "fence-timeout",
              detail: result.detail.slice(0, 2000),
            },
            attempt: rt.fenceFailures + 1,
          },
          { correlationId: incidentId, causationId: `fence:${incidentId}` },
        );
  // What each of the fence's log lines says: where its time went, and how many conflicts it met.
  const facts = (conflicts: number) => ({
    runtime: rt.runtimeInstanceId,
    incidentId,
    outcome: result.outcome,
    conflicts,
    killMs,
    ...(result.timingsMs ? { kill: result.timingsMs } : {}),
  });
  // A proven kill goes on top of the host's observations of it (decided-append.ts) rather than being
  // killed again on the next pass; a fence-failed does not.
  const a = await appendDecided(deps, rt, event, result.outcome === "killed");
  if ("dropped" in a) {
    // Not recorded: the next pass decides again from the runtime's new history (and kills again).
    deps.log.warn(facts(a.conflicts), `fence outcome not recorded: ${a.dropped}`);
    return;
  }
  deps.log.warn(
    { ...facts(a.conflicts), appendedMs: Math.round(performance.now() - t0) },
    result.outcome === "killed"
      ? "runtime fenced"
      : result.outcome === "out-of-reach"
        ? "host out of this fencer's reach: not fenced"
        : "fence timed out",
  );
  // Not awaited: the rounds take a second or so, and the work can move meanwhile (the fence is in
  // the log, so the callout refuses the runtime and the conditional appends refuse a zombie).
  if (result.outcome === "killed") void kickFenced(deps, rt.runtimeInstanceId);
}

/** The host strategy of this replica that can kill `rt`'s host, if there is one and `rt` has a host. */
export function fencerOf(deps: RecoveryDeps, rt: RuntimeRecord): HostStrategy | undefined {
  const provider = hostProviderOf(rt);
  return provider && rt.host ? deps.hosts(provider) : undefined;
}

/**
 * Ends the fenced runtime's live NATS connections now rather than at its minted user's expiry: a
 * zombie the kill could not reach (a partitioned node) can no longer append. The credentials are
 * revoked first (the `fenced` just appended: the auth callout refuses every later connect), then
 * CONNZ + KICK repeat until a round, a settle time after the last kick, finds no connection of
 * that user (platform/nats-auth/kick.ts `kickUntilGone`): a connection that reconnected between a
 * CONNZ and its KICK, or that the callout authorized just before the fence, is found by a later
 * round. A failed kick, or connections still there after the last round, are logged: the expiry
 * still bounds them, and the log's conditional appends refuse a stale writer.
 */
async function kickFenced(deps: RecoveryDeps, runtimeInstanceId: string): Promise<void> {
  if (!deps.kick) return;
  try {
    const r = await deps.kick(runtimeInstanceId);
    if (r.remaining > 0)
      deps.log.warn({ runtime: runtimeInstanceId, ...r }, "fenced runtime still has NATS connections after the kicks");
    else deps.log.info({ runtime: runtimeInstanceId, ...r }, "fenced runtime's NATS connections kicked");
  } catch (e) {
    deps.log.warn({ runtime: runtimeInstanceId, err: String(e) }, "kick of a fenced runtime's NATS connections failed");
  }
}
