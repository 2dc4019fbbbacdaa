import { DroverError, isDroverError, type RuntimeWorker, type TenantId } from "../../../contracts/index.ts";
import { deployDecision } from "../../../aggregates/capacity/worker-deploys.ts";
import { readDeploys } from "../../../platform/worker-deploys.ts";
import { imageDigest } from "../domain/kubernetes-worker.ts";
import { sourceWorker } from "../../../platform/hosts/worker-builds.ts";
import { workerDeploysRef } from "../../../streams/index.ts";
import { stamp, type ProvisionerDeps } from "./context.ts";

/** Looks at a lost race this many times (each time the aggregate moved) before giving up until the next check. */
const ATTEMPTS = 5;

/**
 * Records `worker` as the tenant's deployed version (docs/worker-versions.md "Deploys as events"):
 * `worker.deployed` appended conditionally on the deploys aggregate's last sequence, answering the
 * oldest request no deploy answered yet. Nothing is appended when that version is deployed already
 * and no request waits. On a conflict (another deploy or request landed) the aggregate is read
 * again and decided again: the same version deployed by another replica is "current"; another
 * version is followed by ours (the last deploy wins, each recorded).
 */
export async function recordDeploy(
  d: ProvisionerDeps,
  tenantId: string,
  worker: Pick<RuntimeWorker, "version" | "image">,
  kinds: readonly string[],
): Promise<"deployed" | "current"> {
  const ref = workerDeploysRef(tenantId);
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const state = await readDeploys(d.store, tenantId);
    if (deployDecision(state, worker.version) === "current") return "current";
    const previous = state.deployed?.data.version;
    const data = {
      version: worker.version,
      ...(worker.image ? { image: worker.image } : {}),
      kinds: [...kinds],
      ...(state.pending ? { requestedBy: state.pending.requestedBy, requestSeq: state.pending.seq } : {}),
      ...(previous ? { previous } : {}),
    };
    const origin = {
      instanceId: d.instanceId,
      correlationId: `worker-deploy:${tenantId}`,
      causationId: state.pending ? `worker-deploy-requested:${state.pending.seq}` : `provisioner:${d.instanceId}`,
      tenantId: tenantId as TenantId,
    };
    try {
      await d.store.append(ref, stamp(d, "worker.deployed", data, origin), { expectedSeq: state.lastSeq });
      d.log("worker deployed", { tenantId, version: worker.version, previous, requestedBy: data.requestedBy });
      return "deployed";
    } catch (e) {
      if (!isDroverError(e, "version-conflict")) throw e;
      d.log("worker deploy raced another; reading the deploys again", { tenantId, attempt });
    }
  }
  throw new DroverError("version-conflict", `worker deploys of ${tenantId} moved ${ATTEMPTS} times while deploying`, {
    retryable: true,
  });
}

/**
 * The version the tenant's non-pinned runtimes would run if started now, from this provisioner's
 * configuration: process hosts build the module (the bundle's digest); Kubernetes hosts name the
 * image (its digest; a tag reference versions nothing: undefined). Undefined: no worker.
 */
export async function buildCurrent(
  d: ProvisionerDeps,
  tenantId: string,
  built: Map<string, string> = new Map(),
): Promise<Pick<RuntimeWorker, "version" | "image"> | undefined> {
  const t = d.tenantSettings?.(tenantId);
  if (!t?.worker) return undefined;
  if (t.hostProvider === "kubernetes") {
    const image = t.worker.image ?? d.kubernetesImage;
    const version = image === undefined ? undefined : imageDigest(image);
    return version && image ? { version, image } : undefined;
  }
  if (!d.strategies.has("process")) return undefined;
  // Tenants sharing a module share its build within one look (`built`: module → version).
  const version = built.get(t.worker.module) ?? (await (d.buildWorker ?? sourceWorker)(t.worker.module)).worker.version;
  built.set(t.worker.module, version);
  return { version };
}

/**
 * One look at every configured tenant with a worker: its current build is recorded as deployed
 * when it is not yet, or when a deploy request waits (`drover workers deploy`). Called at the
 * provisioner's start (a deploy is announced without any runtime starting: an old version's live
 * runtimes drain from then on) and every drain check (answering requests). A tenant whose build
 * fails is logged and looked at again next time.
 */
export async function deployCurrentBuilds(
  d: ProvisionerDeps,
  tenantIds: readonly string[],
  only: "all" | "requested",
): Promise<void> {
  const builds = new Map<string, string>();
  for (const tenantId of tenantIds) {
    try {
      if (only === "requested" && !(await readDeploys(d.store, tenantId)).pending) continue;
      const built = await buildCurrent(d, tenantId, builds);
      if (!built) continue;
      await recordDeploy(d, tenantId, built, d.tenantSettings!(tenantId).worker!.kinds);
    } catch (e) {
      d.log("worker deploy failed; looked at again at the next check", { tenantId, err: String(e) });
    }
  }
}
