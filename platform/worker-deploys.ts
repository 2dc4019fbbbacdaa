import { foldDeploys, type DeployState } from "../aggregates/capacity/worker-deploys.ts";
import { workerDeploysRef, type EventStore } from "../streams/index.ts";

/**
 * Reads the tenant's deploys aggregate (`drover.worker.<tenant>.deploys`, a handful of events: one
 * per deploy and request) and folds it (docs/worker-versions.md "Deploys as events").
 */
export async function readDeploys(store: EventStore, tenantId: string): Promise<DeployState> {
  const h = await store.read(workerDeploysRef(tenantId), { skipUndecodable: true });
  return foldDeploys(h.events, h.lastSeq);
}

/** The tenant's last deployed worker version, undefined when it was never deployed by event. */
export const deployedVersion = async (store: EventStore, tenantId: string): Promise<string | undefined> =>
  (await readDeploys(store, tenantId)).deployed?.data.version;

/**
 * Per-tenant deployed versions read at most once each for as long as the cache lives (one admission
 * pass, one API answer, one drain check): every decision of that pass agrees on "current".
 */
export function deployedVersions(store: EventStore): (tenantId: string) => Promise<string | undefined> {
  const seen = new Map<string, Promise<string | undefined>>();
  return (tenantId) => {
    let p = seen.get(tenantId);
    if (!p) {
      p = deployedVersion(store, tenantId);
      seen.set(tenantId, p);
      // A failed read is not cached: the next reader tries again.
      p.catch(() => seen.delete(tenantId));
    }
    return p;
  };
}
