import type { JetStreamManager } from "@nats-io/jetstream";
import { isDroverError, type DroverEvent, type FenceProof, type StoredHeartbeat } from "../../../contracts/index.ts";
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

/**
 * What became of an observed exit here: a planned stop recorded, left to the ordinary `host-exited`
 * (`not-drained`, `claimed`), or `deferred`: a drained runtime Pod's container terminated, and its
 * planned stop waits for the Pod's UID to be gone (its `pod-deleted`), nothing recorded meanwhile.
 */
export type DrainedExit = "retired" | "not-drained" | "claimed" | "deferred";

/**
 * A runtime stopped from outside drover (an operator's `kill`, a supervisor's stop: SIGTERM; for a
 * Pod, `kubectl delete` or an eviction, the kubelet's SIGTERM) drains (services/runtime/shell/stop.ts)
 * and exits 0. When the exit this provisioner observed is exactly that, a full drain of the
 * incarnation the runtime's own last heartbeat said `draining` of, it is a planned stop, not a
 * failure: `runtime retired` with `stopped` (reason `host-stopped`, a `stop-…` id), conditional on the
 * runtime as read, as the provisioner's own stop records it (stop-hosts.ts). Recovery then moves
 * whatever was left there without an incident (nothing, after a full drain), and no `host-exited` is
 * recorded. Anything else (another exit code or a signal: a crash mid-drain, a drain cut short; no
 * draining beat; recovery's failure path first) is `not-drained` or `claimed`, and the caller records
 * the exit as evidence as before.
 *
 * A process host: its exit 0 with no signal, the process exit as the proof. A Pod: only after an
 * idle draining beat (nothing running or queued: the end of its drain, as recovery's grace counts it,
 * services/recovery/shell/state.ts), its `container-terminated` is `deferred` and its `pod-deleted`
 * retires it with the Pod UID gone as the proof (what a Kubernetes kill proves, pod-kill.ts), unless
 * its kubelet reported an exit code other than 0. A Pod that died mid-drain, or exited non-zero, is an
 * incident as before.
 *
 * Trust: the draining beat is the runtime's word about itself only (its heartbeat subject is its
 * own), and the exit is the host's proof; a runtime can at most have its own proven exit recorded as
 * a planned stop rather than an incident. A deferred Pod whose UID never goes (its container ended but
 * nobody deletes the Pod) records nothing here: recovery's kill budget after its idle beat still runs,
 * and it is suspected and fenced as any silent runtime. Failure modes: store errors propagate (the
 * caller records `host-exited` instead, the conservative reading).
 */
export async function recordDrainedExit(d: ProvisionerDeps, fact: HostObservation): Promise<DrainedExit> {
  if (!d.latestBeat) return "not-drained";
  if (fact.kind === "exited" ? fact.exitCode !== 0 || fact.signal !== null : fact.kind === "pod-failed")
    return "not-drained";
  if (fact.kind !== "exited" && fact.exitCode !== undefined && fact.exitCode !== 0) return "not-drained";
  const beat = await d.latestBeat(fact.runtimeInstanceId);
  if (!beat?.draining || beat.hostIncarnation !== fact.hostIncarnation) return "not-drained";
  if (fact.kind !== "exited" && (beat.runningRuns > 0 || beat.queuedRuns > 0)) return "not-drained";
  const ref = runtimeRef(fact.runtimeInstanceId);
  for (let conflicts = 0; ; conflicts++) {
    const hist = await d.store.read(ref);
    const reg = registrationOf(hist.events);
    const host = hist.events.find(
      (s) => s.event.type === "runtime.host-started" && s.event.data.hostIncarnation === fact.hostIncarnation,
    )?.event;
    if (reg?.type !== "runtime.registered" || host?.type !== "runtime.host-started") return "not-drained";
    const proved = exitProof(host.data, fact, beat.beat);
    if (!proved) return "not-drained";
    if (claimedElsewhere(hist.events)) return "claimed";
    if (proved === "deferred") return "deferred";
    const e = hostStoppedRetired(d, reg, fact.runtimeInstanceId, fact.hostIncarnation, proved.detail, proved.proof);
    try {
      await d.store.append(ref, e, { expectedSeq: hist.lastSeq });
      return "retired";
    } catch (err) {
      if (!isDroverError(err, "version-conflict") || conflicts >= MAX_CONFLICTS) throw err;
    }
  }
}

type HostStarted = Extract<DroverEvent, { type: "runtime.host-started" }>["data"];

/** The proof of a drained runtime's exit `fact` gives for its `host`, `deferred` until it has one, or none. */
function exitProof(
  host: HostStarted,
  fact: HostObservation,
  beat: number,
): { proof: FenceProof; detail: string } | "deferred" | undefined {
  if (fact.kind === "exited") {
    if (!host.pid) return undefined;
    return {
      proof: { kind: "process-exit", pid: host.pid, exitCode: 0, signal: null },
      detail: `stopped from outside drover: the runtime drained (its heartbeat ${beat} said draining) and host pid ${host.pid} exited 0`,
    };
  }
  if (!host.podUid || !host.podName || !host.namespace) return undefined;
  if (fact.kind !== "pod-deleted") return "deferred";
  const { podUid, podName, namespace } = host;
  const exit = fact.exitCode === undefined ? "its exit code unreported" : `exit ${fact.exitCode}`;
  return {
    proof: { kind: "pod-uid-gone", podUid, podName, namespace, observedBy: "pod-watch" },
    detail: `stopped from outside drover: the runtime drained (its heartbeat ${beat} said draining, nothing running or queued) and pod ${namespace}/${podName} (uid ${podUid}) is gone (${exit})`,
  };
}
