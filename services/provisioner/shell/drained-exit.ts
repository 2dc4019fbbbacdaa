import type { JetStreamManager } from "@nats-io/jetstream";
import { isDroverError, type StoredHeartbeat } from "../../../contracts/index.ts";
import type { HostObservation } from "../../../platform/hosts/types.ts";
import { lastHeartbeatMessage, runtimeRef, storedHeartbeat, type StreamLayout } from "../../../streams/index.ts";
import type { ProvisionerDeps } from "./context.ts";
import { claimedElsewhere, hostStoppedRetired, registrationOf } from "./stop-hosts.ts";

const MAX_CONFLICTS = 8;

/**
 * The stream's last heartbeat of a runtime as the control plane may believe it (its subject names the
 * runtime: streams/heartbeat-message.ts), or undefined when there is none (or it is not believable).
 */
export const lastBeatReader =
  (jsm: JetStreamManager, layout: StreamLayout) =>
  async (runtimeInstanceId: string): Promise<StoredHeartbeat | undefined> => {
    const m = await lastHeartbeatMessage(jsm, layout, runtimeInstanceId);
    if (!m) return undefined;
    try {
      return storedHeartbeat(layout.heartbeatPrefix, m, m.time.getTime());
    } catch {
      return undefined;
    }
  };

/** What became of an observed exit here: a planned stop recorded, or left to the ordinary `host-exited`. */
export type DrainedExit = "retired" | "not-drained" | "claimed";

/**
 * A runtime stopped from outside drover (an operator's `kill`, a supervisor's stop: SIGTERM) drains
 * (services/runtime/shell/stop.ts) and exits 0. When the exit this provisioner observed is exactly that,
 * a full drain of the incarnation the runtime's own last heartbeat said `draining` of, it is a planned
 * stop, not a failure: `runtime retired` with `stopped` (reason `host-stopped`, the process exit as its
 * proof, a `stop-…` id), conditional on the runtime as read, as the provisioner's own stop records it
 * (stop-hosts.ts). Recovery then moves whatever was left there without an incident (nothing, after a
 * full drain), and no `host-exited` is recorded. Anything else (another exit code or a signal: a crash
 * mid-drain, a drain cut short; no draining beat; a Pod; recovery's failure path first) is
 * `not-drained` or `claimed`, and the caller records the exit as evidence as before.
 *
 * Trust: the draining beat is the runtime's word about itself only (its heartbeat subject is its
 * own), and the exit is the host's proof; a runtime can at most have its own proven exit recorded as
 * a planned stop rather than an incident. Failure modes: store errors propagate (the caller records
 * `host-exited` instead, the conservative reading).
 */
export async function recordDrainedExit(d: ProvisionerDeps, fact: HostObservation): Promise<DrainedExit> {
  if (fact.kind !== "exited" || fact.exitCode !== 0 || fact.signal !== null || !d.latestBeat) return "not-drained";
  const beat = await d.latestBeat(fact.runtimeInstanceId);
  if (!beat?.draining || beat.hostIncarnation !== fact.hostIncarnation) return "not-drained";
  const ref = runtimeRef(fact.runtimeInstanceId);
  for (let conflicts = 0; ; conflicts++) {
    const hist = await d.store.read(ref);
    const reg = registrationOf(hist.events);
    const host = hist.events.find(
      (s) => s.event.type === "runtime.host-started" && s.event.data.hostIncarnation === fact.hostIncarnation,
    )?.event;
    if (reg?.type !== "runtime.registered" || host?.type !== "runtime.host-started" || !host.data.pid)
      return "not-drained";
    if (claimedElsewhere(hist.events)) return "claimed";
    const pid = host.data.pid;
    const detail = `stopped from outside drover: the runtime drained (its heartbeat ${beat.beat} said draining) and host pid ${pid} exited 0`;
    const proof = { kind: "process-exit", pid, exitCode: 0, signal: null } as const;
    const e = hostStoppedRetired(d, reg, fact.runtimeInstanceId, fact.hostIncarnation, detail, proof);
    try {
      await d.store.append(ref, e, { expectedSeq: hist.lastSeq });
      return "retired";
    } catch (err) {
      if (!isDroverError(err, "version-conflict") || conflicts >= MAX_CONFLICTS) throw err;
    }
  }
}
