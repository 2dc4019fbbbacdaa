import type { CoreV1Api, KubeConfig, V1Pod } from "@kubernetes/client-node";
import { isApiCode } from "../lib/api-errors.ts";
import { startInformer, type Informer } from "../lib/informer.ts";
import type { Logger } from "../lib/log.ts";

/**
 * A stand-in for kube-scheduler, which this cluster does not run: binds every unscheduled Pod that
 * asks for the default scheduler to `nodeName` through the pods/binding subresource (exactly what
 * the scheduler does). Node selectors, affinities, taints and resources are not evaluated. A
 * conflict (someone else bound it first) is ignored.
 */
export async function startPodBinder(
  kc: KubeConfig,
  core: CoreV1Api,
  nodeName: string,
  log: Logger,
): Promise<Informer<V1Pod>> {
  const bind = (pod: V1Pod): void => {
    const md = pod.metadata ?? {};
    const scheduler = pod.spec?.schedulerName ?? "default-scheduler";
    if (pod.spec?.nodeName || md.deletionTimestamp || scheduler !== "default-scheduler") return;
    core
      .createNamespacedPodBinding({
        name: md.name ?? "",
        namespace: md.namespace ?? "",
        body: {
          metadata: { name: md.name ?? "", uid: md.uid },
          target: { apiVersion: "v1", kind: "Node", name: nodeName },
        },
      })
      .then(() => log.info("bound pod", { pod: `${md.namespace}/${md.name}`, node: nodeName }))
      .catch((err: unknown) => {
        if (!isApiCode(err, 404, 409)) log.warn("binding failed", { pod: `${md.namespace}/${md.name}`, err });
      });
  };
  return startInformer<V1Pod>(kc, {
    path: "/api/v1/pods",
    fieldSelector: "spec.nodeName=",
    list: () => core.listPodForAllNamespaces({ fieldSelector: "spec.nodeName=" }),
    onChange: (kind, pod) => {
      if (kind !== "delete") bind(pod);
    },
    log,
  });
}
