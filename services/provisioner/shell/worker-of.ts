import type { HostProvider, Reason, RuntimeWorker } from "../../../contracts/index.ts";
import { sourceWorker } from "../../../platform/hosts/worker-builds.ts";
import { kubernetesWorker } from "../domain/kubernetes-worker.ts";
import type { Roster } from "../domain/runtime-roster.ts";
import type { ProvisionerDeps } from "./context.ts";

/**
 * The worker a runtime of the tenant registers (docs/worker-versions.md): the version the request
 * pins, or the tenant's current one. Process hosts: the module built now (or a pinned version's
 * bundle). Kubernetes hosts: the digest of the image the Pod runs (domain/kubernetes-worker.ts).
 */
export async function workerOf(
  d: ProvisionerDeps,
  tenantId: string | undefined,
  provider: HostProvider,
  version: string | undefined,
  roster: Roster,
): Promise<{ readonly worker: RuntimeWorker } | { readonly reason: Reason } | undefined> {
  const worker = tenantId && d.tenantSettings ? d.tenantSettings(tenantId).worker : undefined;
  if (!worker || !tenantId) return undefined;
  if (provider === "kubernetes") {
    const image = worker.image ?? d.kubernetesImage;
    if (image === undefined) return undefined;
    return kubernetesWorker({ image, tenantId, roster, now: d.clock.now(), ...(version ? { version } : {}) });
  }
  try {
    return { worker: (await (d.buildWorker ?? sourceWorker)(worker.module, version)).worker };
  } catch (e) {
    return { reason: { code: "worker-invalid", detail: String((e as Error).message ?? e).slice(0, 2000) } };
  }
}

/** The handlers of the tenant's worker, from this provisioner's own configuration. */
export function workerKindsOf(d: ProvisionerDeps, tenantId: string | undefined): { workerKinds?: readonly string[] } {
  const worker = tenantId && d.tenantSettings ? d.tenantSettings(tenantId).worker : undefined;
  return worker ? { workerKinds: worker.kinds } : {};
}
