import type { V1Pod } from "@kubernetes/client-node";
import type { ObjectEvent } from "./watch-object.ts";

export type ReadyDecision =
  { readonly ok: true; readonly pod: V1Pod } | { readonly ok: false; readonly detail: string };

/**
 * Waiting reasons the kubelet retries by itself: `CreateContainerConfigError` is what a real kubelet
 * reports while it cannot yet read a Secret the Pod references ("failed to sync secret cache": the
 * Node authorizer learns of the Pod → Secret edge a moment after the Pod is bound), and it starts
 * the container on a later sync. The readiness budget bounds the wait; a Secret that never appears
 * ends as `pod-readiness-timeout`.
 */
const TRANSIENT_WAITING: ReadonlySet<string> = new Set(["CreateContainerConfigError"]);

/** Why a Pod's runtime container stopped, when it did (terminated state, or a config error it cannot start with). */
export function containerStopped(pod: V1Pod): string | undefined {
  for (const s of pod.status?.containerStatuses ?? []) {
    const t = s.state?.terminated;
    if (t)
      return `container ${s.name} terminated (exit ${t.exitCode}${t.signal ? `, signal ${t.signal}` : ""}, ${t.reason ?? ""})`;
    const w = s.state?.waiting;
    if (w && /Error|BackOff|Invalid/.test(w.reason ?? "") && !TRANSIENT_WAITING.has(w.reason ?? ""))
      return `container ${s.name} cannot start: ${w.reason} ${w.message ?? ""}`;
  }
  return undefined;
}

/**
 * The exit code of a Pod whose containers ended, as its kubelet reports them: the first non-zero
 * `terminated.exitCode`, else 0 once every container status is terminated. Undefined while any
 * container has no terminated state (still running, or the Pod gone before its kubelet said).
 */
export function podExitCode(pod: V1Pod | undefined): number | undefined {
  const statuses = pod?.status?.containerStatuses ?? [];
  if (statuses.length === 0) return undefined;
  let code = 0;
  for (const s of statuses) {
    const t = s.state?.terminated;
    if (!t) return undefined;
    if (code === 0) code = t.exitCode;
  }
  return code;
}

/**
 * Readiness of the exact Pod `uid`: Ready=True on that UID is ready; the UID gone (deleted, or the
 * name now holding another Pod), Terminating, phase Failed/Succeeded or a stopped container is a failure (no
 * waiting for a timeout: a runtime Pod never restarts). Anything else: keep watching.
 */
export function readyDecision(uid: string, e: ObjectEvent<V1Pod>): ReadyDecision | undefined {
  const pod = e.obj;
  if (!pod || e.type === "DELETED")
    return pod && pod.metadata?.uid !== uid
      ? undefined
      : { ok: false, detail: `pod ${uid} was deleted before it became Ready` };
  if (pod.metadata?.uid !== uid)
    return { ok: false, detail: `pod ${uid} was replaced by ${pod.metadata?.uid} before it became Ready` };
  // A Terminating Pod may still say Ready; it is never a host to start on or converge onto.
  if (pod.metadata?.deletionTimestamp) return { ok: false, detail: `pod ${uid} is terminating` };
  const phase = pod.status?.phase;
  if (phase === "Failed" || phase === "Succeeded")
    return { ok: false, detail: `pod ${uid} is ${phase}: ${containerStopped(pod) ?? pod.status?.message ?? ""}` };
  const stopped = containerStopped(pod);
  if (stopped) return { ok: false, detail: `pod ${uid}: ${stopped}` };
  const ready = (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
  return ready ? { ok: true, pod } : undefined;
}

/**
 * Whether Pod `uid` no longer exists, and how that was seen: absent from a list, a DELETED event for
 * that UID, or the name now holding another UID (which also proves the old one is gone: names are
 * unique). A Terminating Pod with that UID is still there.
 */
export function goneDecision(uid: string, e: ObjectEvent<V1Pod>): string | undefined {
  if (!e.obj) return "list-absent";
  if (e.obj.metadata?.uid !== uid)
    return e.type === "DELETED" ? undefined : `${e.type === "LISTED" ? "list" : "watch"}-replaced`;
  return e.type === "DELETED" ? "watch-deleted" : undefined;
}

/**
 * Whether no container of Pod `uid` can run again, as its kubelet reports it: `restartPolicy:
 * Never` and every container (init containers included) `terminated`, or the phase terminal. A
 * container's PID 1 has then exited and the kernel has killed the rest of its PID namespace, and the
 * kubelet never starts it again; only the sandbox may still be torn down. Anything else: undefined.
 */
export function stoppedForGood(uid: string, e: ObjectEvent<V1Pod>): string | undefined {
  const pod = e.obj;
  if (!pod || e.type === "DELETED" || pod.metadata?.uid !== uid) return undefined;
  const phase = pod.status?.phase;
  if (phase === "Failed" || phase === "Succeeded") return `phase ${phase}`;
  if (pod.spec?.restartPolicy !== "Never") return undefined;
  const want = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].map((c) => c.name);
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  const terminated = new Set(statuses.filter((s) => s.state?.terminated).map((s) => s.name));
  return want.length > 0 && want.every((n) => terminated.has(n)) ? "every container terminated" : undefined;
}
