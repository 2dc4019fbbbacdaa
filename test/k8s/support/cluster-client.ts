import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { CoreV1Api, CustomObjectsApi, Watch, type KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { inject } from "vitest";
import { AUDIT_LOG } from "../../../k8s/local-cluster/control-plane/control-plane.ts";
import { loadKubeconfig } from "../../../k8s/local-cluster/control-plane/kubeconfig.ts";

/** Clients for the run's local cluster (started by global-setup.ts). */
export function clusterClients(): { kc: KubeConfig; core: CoreV1Api; custom: CustomObjectsApi } {
  const kc = loadKubeconfig(inject("k8sKubeconfig"));
  return { kc, core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi) };
}

/**
 * Creates a namespace with a random suffix (tests share one cluster). Namespaces are not deleted
 * afterwards: with no controller-manager, namespace deletion never completes; the cluster is thrown
 * away at the end of the run instead.
 */
export async function freshNamespace(
  core: CoreV1Api,
  prefix: string,
  labels: Record<string, string> = {},
): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString("hex")}`;
  await core.createNamespace({ body: { metadata: { name, labels } } });
  return name;
}

/**
 * Watches one Pod (by name) until `done(pod | undefined)` is true — undefined meaning "deleted" — and
 * resolves with the last state seen; rejects after `timeoutMs`. Event-driven: no polling, no sleeps.
 * A watch starts from the current state (list, then watch from its resourceVersion).
 */
export async function waitForPod(
  kc: KubeConfig,
  core: CoreV1Api,
  namespace: string,
  name: string,
  done: (pod: V1Pod | undefined) => boolean,
  timeoutMs = 30_000,
): Promise<V1Pod | undefined> {
  const fieldSelector = `metadata.name=${name}`;
  const list = await core.listNamespacedPod({ namespace, fieldSelector });
  const now = list.items[0];
  if (done(now)) return now;
  let last = now;
  let controller: AbortController | undefined;
  try {
    return await new Promise<V1Pod | undefined>((ok, fail) => {
      const timer = setTimeout(
        () =>
          fail(
            new Error(
              `pod ${namespace}/${name}: condition not met within ${timeoutMs} ms; last: ${JSON.stringify(last?.status)}`,
            ),
          ),
        timeoutMs,
      );
      const finish = (p: V1Pod | undefined): void => {
        clearTimeout(timer);
        ok(p);
      };
      void new Watch(kc)
        .watch(
          `/api/v1/namespaces/${namespace}/pods`,
          { fieldSelector, resourceVersion: list.metadata?.resourceVersion },
          (type: string, obj: V1Pod) => {
            if (type === "ERROR") {
              clearTimeout(timer);
              fail(new Error(`watch error: ${JSON.stringify(obj)}`));
              return;
            }
            last = type === "DELETED" ? undefined : obj;
            if (type !== "BOOKMARK" && done(last)) finish(last);
          },
          (err: unknown) => {
            if (err) {
              clearTimeout(timer);
              fail(err instanceof Error ? err : new Error(String(err)));
            }
          },
        )
        .then((c) => {
          controller = c;
        }, fail);
    });
  } finally {
    controller?.abort();
  }
}

/** True when the Pod reports Ready=True. */
export const isReady = (p: V1Pod | undefined): boolean =>
  (p?.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");

/**
 * Retries `fn` until it returns a value that is not undefined, or throws after `timeoutMs` with the
 * last error. For conditions with no watchable event (a socket answering); each try is bounded.
 */
export async function eventually<T>(fn: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not true within ${timeoutMs} ms (${String(lastErr)})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A Pod delete as the API server's audit log recorded it: response code and the DeleteOptions sent. */
export interface AuditedDelete {
  code: number;
  gracePeriodSeconds: number | undefined;
  preconditionUid: string | undefined;
}

/**
 * Every completed delete of Pod `namespace/name`, in order, from the local cluster's audit log
 * (`<runDir>/audit.log`, written by kube-apiserver itself as each request's handler returns, so a
 * delete whose effect a client already saw may take a moment to appear: poll for it).
 */
export async function auditedPodDeletes(runDir: string, namespace: string, name: string): Promise<AuditedDelete[]> {
  interface Event {
    stage: string;
    verb: string;
    objectRef?: { resource?: string; namespace?: string; name?: string };
    responseStatus?: { code?: number };
    requestObject?: { gracePeriodSeconds?: number; preconditions?: { uid?: string } };
  }
  const text = await readFile(join(runDir, AUDIT_LOG), "utf8");
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Event)
    .filter(
      (e) =>
        e.stage === "ResponseComplete" &&
        e.verb === "delete" &&
        e.objectRef?.resource === "pods" &&
        e.objectRef.namespace === namespace &&
        e.objectRef.name === name,
    )
    .map((e) => ({
      code: e.responseStatus?.code ?? 0,
      gracePeriodSeconds: e.requestObject?.gracePeriodSeconds,
      preconditionUid: e.requestObject?.preconditions?.uid,
    }));
}
