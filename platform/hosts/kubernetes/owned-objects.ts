import type { CoreV1Api, CustomObjectsApi, KubeConfig, V1ObjectMeta } from "@kubernetes/client-node";
import { apiFailure } from "./api-errors.ts";
import { labelValue } from "./names.ts";
import { waitPodUidGone } from "./pod-kill.ts";
import { deleteExact } from "./resources.ts";
import { GATEWAY_API } from "./routes.ts";
import { L, MANAGED_BY } from "./spec.ts";

/** An object a start attempt created (and so may delete): exact by UID. */
export interface OwnedObject {
  readonly kind: "Secret" | "Pod" | "Service" | "HTTPRoute" | "GRPCRoute";
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

const ROUTE_PLURAL = { HTTPRoute: "httproutes", GRPCRoute: "grpcroutes" } as const;

/**
 * Deletes what a failed start created, newest first, each by UID precondition (so an object that
 * was replaced under the same name is never touched); a created Pod is deleted with grace 0 (it
 * never served) and waited for until its UID is gone. Never throws: returns the problems (empty
 * when everything is gone) so the rejection can name them.
 */
export async function cleanupOwned(
  kc: KubeConfig,
  core: CoreV1Api,
  custom: CustomObjectsApi,
  owned: readonly OwnedObject[],
  budgetMs: number,
): Promise<string> {
  const problems: string[] = [];
  const deadline = Date.now() + budgetMs;
  for (const o of [...owned].reverse()) {
    const { namespace, name } = o;
    try {
      if (o.kind === "Pod") {
        await deleteExact((body) => core.deleteNamespacedPod({ namespace, name, body }), o.uid, 0);
        if (!(await waitPodUidGone(kc, core, namespace, name, o.uid, deadline)))
          problems.push(`pod ${name} uid ${o.uid} still exists`);
      } else if (o.kind === "Service") {
        await deleteExact((body) => core.deleteNamespacedService({ namespace, name, body }), o.uid);
      } else if (o.kind === "Secret") {
        await deleteExact((body) => core.deleteNamespacedSecret({ namespace, name, body }), o.uid);
      } else if (o.kind === "HTTPRoute" || o.kind === "GRPCRoute") {
        const plural = ROUTE_PLURAL[o.kind];
        await deleteExact(
          (body) => custom.deleteNamespacedCustomObject({ ...GATEWAY_API, namespace, plural, name, body }),
          o.uid,
        );
      }
    } catch (e) {
      problems.push(`${o.kind} ${name}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return problems.join("; ");
}

/**
 * After a kill: removes the runtime's Services (ClusterIP and NodePort), route (either kind) and token Secret when they are
 * drover's for this RuntimeInstanceId (label check, then a UID-preconditioned delete). Best effort:
 * these objects carry no execution, so a failure here never weakens the kill's boundary.
 */
export async function removeRuntimeObjects(
  core: CoreV1Api,
  custom: CustomObjectsApi,
  namespace: string,
  runtimeInstanceId: string,
  names: { service: string; route: string; secret: string; nodePort: string },
): Promise<void> {
  const ours = (m: V1ObjectMeta | undefined): boolean =>
    m?.labels?.[L.runtime] === labelValue(runtimeInstanceId) && m.labels[L.managedBy] === MANAGED_BY;
  const remove = async (
    read: () => Promise<{ metadata?: V1ObjectMeta }>,
    del: (body: object) => Promise<unknown>,
  ): Promise<void> => {
    let obj;
    try {
      obj = await read();
    } catch (e) {
      if (apiFailure(e)?.code === 404) return;
      throw e;
    }
    if (ours(obj.metadata) && obj.metadata?.uid) await deleteExact(del, obj.metadata.uid);
  };
  const name = names.route;
  await Promise.allSettled([
    remove(
      () => core.readNamespacedService({ namespace, name: names.service }),
      (body) => core.deleteNamespacedService({ namespace, name: names.service, body }),
    ),
    remove(
      () => core.readNamespacedService({ namespace, name: names.nodePort }),
      (body) => core.deleteNamespacedService({ namespace, name: names.nodePort, body }),
    ),
    remove(
      () => core.readNamespacedSecret({ namespace, name: names.secret }),
      (body) => core.deleteNamespacedSecret({ namespace, name: names.secret, body }),
    ),
    ...(["httproutes", "grpcroutes"] as const).map((plural) =>
      remove(
        () =>
          custom.getNamespacedCustomObject({ ...GATEWAY_API, namespace, plural, name }) as Promise<{
            metadata?: V1ObjectMeta;
          }>,
        (body) => custom.deleteNamespacedCustomObject({ ...GATEWAY_API, namespace, plural, name, body }),
      ),
    ),
  ]);
}
