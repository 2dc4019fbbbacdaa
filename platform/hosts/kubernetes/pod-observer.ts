import { Watch, type CoreV1Api, type KubeConfig, type V1Pod } from "@kubernetes/client-node";
import type { HostObservation } from "../types.ts";
import { containerStopped, podExitCode } from "./pod-decisions.ts";
import { BOUND_TO } from "./pool-spec.ts";
import { L, MANAGED_BY } from "./spec.ts";

/**
 * Follows drover's runtime Pods in `namespace` and reports host facts once per Pod UID and kind:
 * `pod-deleted` (DELETED, or absent from a re-list), `container-terminated`, `pod-failed`. The
 * RuntimeInstanceId comes from the full-value annotation, the incarnation is `pod:<uid>`; the Pod's
 * exit code rides along once its kubelet reported every container terminated (for `pod-deleted` of
 * a Pod absent from a re-list: as last seen). Lists,
 * then watches from the list's resourceVersion, and lists again whenever the watch ends (410
 * included). Returns a function that stops it.
 */
export function observeRuntimePods(
  kc: KubeConfig,
  core: CoreV1Api,
  namespace: string,
  emit: (fact: HostObservation) => void,
): () => void {
  const labelSelector = `${L.managedBy}=${MANAGED_BY},${L.hostProvider}=kubernetes`;
  const known = new Map<string, { id: string; exitCode: number | undefined }>(); // by uid
  const reported = new Set<string>();
  let stopped = false;
  let controller: AbortController | undefined;
  const report = (kind: HostObservation["kind"], uid: string, id: string, detail: string, exitCode?: number): void => {
    if (kind === "exited" || reported.has(`${uid}:${kind}`)) return;
    reported.add(`${uid}:${kind}`);
    const fact = { kind, runtimeInstanceId: id, hostIncarnation: `pod:${uid}`, detail };
    emit(exitCode === undefined ? fact : { ...fact, exitCode });
  };
  const seen = (type: string, pod: V1Pod): void => {
    const uid = pod.metadata?.uid ?? "";
    // A bound warm pool member's Pod is the bound runtime's host (pool-spec.ts BOUND_TO).
    const id = pod.metadata?.annotations?.[BOUND_TO] ?? pod.metadata?.annotations?.[L.runtime] ?? "";
    if (!uid || !id) return;
    const exitCode = podExitCode(pod) ?? known.get(uid)?.exitCode;
    if (type === "DELETED") {
      known.delete(uid);
      report("pod-deleted", uid, id, `pod ${namespace}/${pod.metadata?.name} deleted`, exitCode);
      return;
    }
    known.set(uid, { id, exitCode });
    const stoppedWhy = containerStopped(pod);
    if (stoppedWhy) report("container-terminated", uid, id, stoppedWhy, exitCode);
    if (pod.status?.phase === "Failed")
      report("pod-failed", uid, id, pod.status.message ?? stoppedWhy ?? "phase Failed", exitCode);
  };
  const loop = async (): Promise<void> => {
    while (!stopped) {
      try {
        const list = await core.listNamespacedPod({ namespace, labelSelector });
        const now = new Set(list.items.map((p) => p.metadata?.uid ?? ""));
        for (const [uid, k] of known)
          if (!now.has(uid)) {
            known.delete(uid);
            report("pod-deleted", uid, k.id, `pod ${uid} absent from a re-list`, k.exitCode);
          }
        for (const p of list.items) seen("MODIFIED", p);
        const began = Date.now();
        await new Promise<void>((done) => {
          void new Watch(kc)
            .watch(
              `/api/v1/namespaces/${namespace}/pods`,
              { labelSelector, resourceVersion: list.metadata?.resourceVersion, allowWatchBookmarks: true },
              (type: string, obj: V1Pod) => {
                if (type === "ERROR") controller?.abort();
                else if (type !== "BOOKMARK") seen(type, obj);
              },
              () => done(),
            )
            .then(
              (c) => {
                controller = c;
                if (stopped) c.abort();
              },
              () => done(),
            );
        });
        // A watch that ends at once (refused, shedding load) must not become a busy list loop.
        if (!stopped && Date.now() - began < 100) await new Promise((r) => setTimeout(r, 500));
      } catch {
        // API server unreachable: try again shortly (a host fact is late, never invented).
        if (!stopped) await new Promise((r) => setTimeout(r, 1000));
      }
    }
  };
  void loop();
  return () => {
    stopped = true;
    controller?.abort();
  };
}
