import type { CoreV1Api, KubeConfig, V1Pod } from "@kubernetes/client-node";
import type { KillResult } from "../types.ts";
import { goneDecision, stoppedForGood } from "./pod-decisions.ts";
import { deleteExact } from "./resources.ts";
import { followObject, type WatchTarget } from "./watch-object.ts";

/** The watch target of one Pod by name. */
export function podTarget(core: CoreV1Api, namespace: string, name: string): WatchTarget<V1Pod> {
  return {
    path: `/api/v1/namespaces/${namespace}/pods`,
    name,
    list: (fieldSelector) => core.listNamespacedPod({ namespace, fieldSelector }),
  };
}

/**
 * Waits until Pod `uid` no longer exists (read → watch by name → compare UIDs → re-list when the
 * watch ends or says 410). Resolves how it was observed, or undefined at the deadline.
 */
export async function waitPodUidGone(
  kc: KubeConfig,
  core: CoreV1Api,
  namespace: string,
  name: string,
  uid: string,
  deadline: number,
): Promise<string | undefined> {
  const r = await followObject(kc, podTarget(core, namespace, name), (e) => goneDecision(uid, e), deadline);
  return typeof r === "string" ? r : undefined;
}

/**
 * Deletes exactly Pod `uid` (UID precondition, `graceSeconds` in the body) and returns only once
 * that UID is gone. Two ways to finish early with a grace-0 delete (still UID-preconditioned):
 * the kubelet reports that no container of the Pod can run again ({@link stoppedForGood}: the
 * runtime already exited, `restartPolicy: Never`) — the API server then removes the UID at once,
 * where the kubelet's own final delete waits for its pod worker to step through termination one
 * PLEG relist (1 s) at a time; or 70 % of the budget has passed (escalation: the proof then rests
 * on the kubelet acting on the deletion). A Pod that now has another UID under the same name is
 * never touched: its existence proves ours is gone. Returns `timeout` when the UID outlives the
 * budget or the API server does not answer.
 */
export async function killPodExact(
  kc: KubeConfig,
  core: CoreV1Api,
  namespace: string,
  name: string,
  uid: string,
  graceSeconds: number,
  budgetMs: number,
): Promise<KillResult> {
  const start = Date.now();
  const del = (grace: number) => deleteExact((body) => core.deleteNamespacedPod({ name, namespace, body }), uid, grace);
  const target = podTarget(core, namespace, name);
  try {
    await del(graceSeconds);
    let observedBy: string | undefined;
    const first = await followObject(
      kc,
      target,
      (e) => {
        const gone = goneDecision(uid, e);
        if (gone) return { gone };
        const stopped = graceSeconds > 0 ? stoppedForGood(uid, e) : undefined;
        return stopped ? { stopped } : undefined;
      },
      start + budgetMs * 0.7,
    );
    if ("gone" in first) observedBy = first.gone;
    else if ("stopped" in first) {
      await del(0);
      observedBy = await waitPodUidGone(kc, core, namespace, name, uid, start + budgetMs);
      if (observedBy) observedBy = `${observedBy} (grace 0 once its kubelet reported ${first.stopped})`;
    } else {
      await del(0);
      observedBy = await waitPodUidGone(kc, core, namespace, name, uid, start + budgetMs);
      if (observedBy) observedBy = `${observedBy} (after escalating to grace 0)`;
    }
    if (!observedBy)
      return {
        outcome: "timeout",
        detail: `pod ${namespace}/${name} uid ${uid} still exists ${budgetMs} ms after its delete`,
      };
    return { outcome: "killed", proof: { kind: "pod-uid-gone", podUid: uid, podName: name, namespace, observedBy } };
  } catch (e) {
    return {
      outcome: "timeout",
      detail: `pod ${namespace}/${name} uid ${uid}: the API server did not answer: ${e instanceof Error ? e.message : String(e)}`,
    };
  }
}
