import { isDroverError } from "../../../contracts/index.ts";
import { envelope } from "../../../platform/envelope.ts";
import { runtimeRef } from "../../../streams/index.ts";
import { fenceStillDecided } from "../domain/fence-append.ts";
import { hostProviderOf, type RuntimeRecord } from "../domain/runtime-health.ts";
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
  const provider = hostProviderOf(rt);
  const strategy = provider ? deps.hosts(provider) : undefined;
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
  // Expect the sequence the decision was based on: if anything was appended since (another
  // replica's plan or fence), this append must conflict rather than repeat it. One exception: the
  // provisioner records what its Pod watch saw of the kill itself (`host-exited`: container
  // terminated, Pod failed, Pod deleted) while the kill runs; those cannot change the decision, so a
  // proven kill is recorded on top of them rather than killed again on the next pass (which cost a
  // whole pass and a second kill on a real node: seconds).
  const ref = runtimeRef(rt.runtimeInstanceId);
  // What each of the fence's log lines says: where its time went, and how many conflicts it met.
  const facts = (conflicts: number) => ({
    runtime: rt.runtimeInstanceId,
    incidentId,
    outcome: result.outcome,
    conflicts,
    killMs,
    ...(result.timingsMs ? { kill: result.timingsMs } : {}),
  });
  // When this replica has already folded those observations (and nothing else) since the decision,
  // the append expects the sequence after them rather than conflicting first and reading the history
  // (a NATS round trip or two each, 0.1-2.4 s at load ~20 on a real node, where nine fences in ten met one).
  const now = deps.state.runtimes.get(rt.runtimeInstanceId);
  let expectedSeq =
    result.outcome === "killed" && now?.decidedSeq !== undefined && now.decidedSeq <= rt.lastSeq
      ? Math.max(now.lastSeq, rt.lastSeq)
      : rt.lastSeq;
  for (let conflicts = 0; ; conflicts++) {
    try {
      const a = await deps.store.append(ref, event, { expectedSeq });
      deps.state.applyOwn(
        `${deps.layout.eventPrefix}.runtime.${rt.runtimeInstanceId}.${event.type.split(".")[1]}`,
        event,
        a.seq,
      );
      deps.log.warn(
        { ...facts(conflicts), appendedMs: Math.round(performance.now() - t0) },
        result.outcome === "killed"
          ? "runtime fenced"
          : result.outcome === "out-of-reach"
            ? "host out of this fencer's reach: not fenced"
            : "fence timed out",
      );
      // Not awaited: the rounds take a second or so, and the work can move meanwhile (the fence is in
      // the log, so the callout refuses the runtime and the conditional appends refuse a zombie).
      if (result.outcome === "killed") void kickFenced(deps, rt.runtimeInstanceId);
      return;
    } catch (e) {
      if (!isDroverError(e, "version-conflict")) throw e;
      // Not recorded: the next pass decides again from the runtime's new history (and kills again).
      const dropped = (why: string): void => deps.log.warn(facts(conflicts), `fence outcome not recorded: ${why}`);
      if (result.outcome !== "killed" || conflicts >= MAX_OBSERVATION_CONFLICTS)
        return dropped("the runtime's log moved since the decision");
      const h = await deps.store.read(ref);
      const since = h.events.filter((s) => s.seq > expectedSeq).map((s) => s.event);
      if (!fenceStillDecided(since, rt.host.hostIncarnation)) return dropped("another decision was appended meanwhile");
      expectedSeq = h.lastSeq;
    }
  }
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

/** Host observations of one kill: container terminated, Pod failed, Pod deleted (each at most once). */
const MAX_OBSERVATION_CONFLICTS = 4;
