import type { CoreV1Api, KubeConfig, V1Pod } from "@kubernetes/client-node";
import type { KillResult } from "../types.ts";
import { goneDecision, stoppedForGood } from "./pod-decisions.ts";
import { deleteExact } from "./resources.ts";
import { unreadAnswer } from "./unread-answer.ts";
import { followObject, type ObjectEvent, type WatchTarget } from "./watch-object.ts";

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
 * that UID is gone. It reads the Pod first: a UID already gone (or a name now holding another UID)
 * needs no delete. Two ways to a grace-0 delete (still UID-preconditioned) without waiting for the
 * kubelet's own final one: the kubelet reports that no container of the Pod can run again
 * ({@link stoppedForGood}: the runtime already exited, `restartPolicy: Never`) — in the read (the
 * usual fence, which begins once the kubelet reported the exit: one delete, no graceful step) or
 * while the graceful delete runs — and the API server then removes the UID at once, where the
 * kubelet's final delete waits for its pod worker to step through termination one PLEG relist (1 s)
 * at a time; or 70 % of the budget has passed (escalation: the proof then rests on the kubelet
 * acting on the deletion). A Pod that now has another UID under the same name is never touched: its
 * existence proves ours is gone. Returns `timeout` when the UID outlives the budget or the API
 * server does not answer.
 * `exitEvidence`: health's evidence that the runtime is dead already (its connection was lost: the
 * server saw its NATS connection close and its command port refused a connection). The kill then
 * goes to the grace-0 delete at once, as it does on its kubelet's report: that report comes at the
 * kubelet's next PLEG relist, 1–5 s after the kill on this 2-core node, and a graceful delete only
 * slows it (the pod worker steps through termination one relist at a time, 2.5–3.5 s measured).
 * What the kubelet's report would have added — that no container of the UID runs — rests here on
 * that evidence, on the kubelet killing what is left of a Pod removed from the API, and on the
 * fence's other mechanisms: the revoked NATS identity (kicked at `fenced`) and the conditional
 * appends that refuse a zombie (docs/kubernetes.md, docs/decisions.md).
 */
export async function killPodExact(
  kc: KubeConfig,
  core: CoreV1Api,
  namespace: string,
  name: string,
  uid: string,
  graceSeconds: number,
  budgetMs: number,
  exitEvidence?: string,
): Promise<KillResult> {
  const t0 = Date.now();
  const deadline = t0 + budgetMs;
  // ms from the call to the end of each step (KillResult.timingsMs); a step taken twice keeps its last.
  const timingsMs: Record<string, number> = {};
  const mark = (step: string): void => {
    timingsMs[step] = Date.now() - t0;
  };
  const del = async (grace: number) => {
    const r = await deleteExact(
      (body) => core.deleteNamespacedPod({ name, namespace, body }, unreadAnswer()),
      uid,
      grace,
    );
    mark(`delete${grace}`);
    return r;
  };
  const target = podTarget(core, namespace, name);
  const stopped = (e: ObjectEvent<V1Pod>) => (graceSeconds > 0 ? stoppedForGood(uid, e) : undefined);
  let read: Awaited<ReturnType<typeof target.list>> | undefined;
  const gone = async (how: string): Promise<string | undefined> => {
    // The watch for the UID's end (from the read's resourceVersion) goes out beside the grace-0
    // delete rather than after its answer: the DELETED event then comes on a request already made,
    // where a list after the delete cost one more round trip (0.2–0.8 s each at load ~20).
    const abort = new AbortController();
    const watching = followObject(kc, target, (e) => goneDecision(uid, e), deadline, abort.signal, read);
    try {
      await del(0);
    } catch (e) {
      abort.abort();
      await watching.catch(() => undefined);
      throw e;
    }
    const r = await watching;
    mark("gone");
    return typeof r === "string" ? `${r} (${how})` : undefined;
  };
  try {
    read = await target.list(`metadata.name=${name}`);
    const listed = { type: "LISTED", obj: read.items[0] } as const;
    mark("read");
    const exited = stopped(listed);
    // Why no container of the UID can run again already: its kubelet's report, else health's evidence.
    const atOnce = exited ? `its kubelet reported ${exited}` : exitEvidence;
    let observedBy = goneDecision(uid, listed);
    if (!observedBy && atOnce) observedBy = await gone(`grace 0 at once: ${atOnce}`);
    else if (!observedBy) {
      await del(graceSeconds);
      const first = await followObject(
        kc,
        target,
        (e) => {
          const g = goneDecision(uid, e);
          if (g) return { gone: g };
          const s = stopped(e);
          return s ? { stopped: s } : undefined;
        },
        deadline - budgetMs * 0.3,
      );
      if ("gone" in first) observedBy = first.gone;
      else if ("stopped" in first) observedBy = await gone(`grace 0 once its kubelet reported ${first.stopped}`);
      else observedBy = await gone("after escalating to grace 0");
    }
    if (!observedBy)
      return {
        outcome: "timeout",
        detail: `pod ${namespace}/${name} uid ${uid} still exists ${budgetMs} ms after its delete`,
        timingsMs,
      };
    return {
      outcome: "killed",
      proof: { kind: "pod-uid-gone", podUid: uid, podName: name, namespace, observedBy },
      timingsMs,
    };
  } catch (e) {
    return {
      outcome: "timeout",
      detail: `pod ${namespace}/${name} uid ${uid}: the API server did not answer: ${e instanceof Error ? e.message : String(e)}`,
      timingsMs,
    };
  }
}
