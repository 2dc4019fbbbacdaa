import { buildEvent, DroverError, isDroverError, tenantSettingsOf, type TenantId } from "../../../contracts/index.ts";
import type { DeployState } from "../../../aggregates/capacity/worker-deploys.ts";
import { readDeploys } from "../../../platform/worker-deploys.ts";
import { aggregateSubject, workerDeploysRef } from "../../../streams/index.ts";
import type { ApiDeps } from "./deps.ts";

/** What `GET /v1/workers` and `POST /v1/workers/deploy` answer (docs/worker-versions.md "Deploys as events"). */
export interface DeployView {
  readonly tenantId: string;
  /** The tenant's last `worker.deployed`; null: never deployed by event. */
  readonly deployed: {
    readonly version: string;
    readonly image: string | null;
    readonly kinds: string[];
    readonly previous: string | null;
    readonly requestedBy: string | null;
    readonly seq: number;
  } | null;
  /** The sequence of a request no deploy answered yet; null: none. */
  readonly pendingRequestSeq: number | null;
}

export const deployView = (tenantId: string, s: DeployState): DeployView => ({
  tenantId,
  deployed: s.deployed
    ? {
        version: s.deployed.data.version,
        image: s.deployed.data.image ?? null,
        kinds: [...s.deployed.data.kinds],
        previous: s.deployed.data.previous ?? null,
        requestedBy: s.deployed.data.requestedBy ?? null,
        seq: s.deployed.seq,
      }
    : null,
  pendingRequestSeq: s.pending?.seq ?? null,
});

const ATTEMPTS = 5;
const POLL_MS = 200;

/**
 * Asks the provisioner to deploy the tenant's worker as its configuration names it now (`POST
 * /v1/workers/deploy`): appends `worker.deploy-requested { requestedBy }` conditionally on the
 * deploys aggregate's last sequence (read again on a conflict: a request is always appended once),
 * then waits up to `waitMs` for the `worker.deployed` that answers it (only the provisioner builds
 * the worker, so only it can name the version). Answers `deployed` with the version, or
 * `requested` when the wait ran out (the provisioner answers at its next deploy check).
 */
export async function requestDeploy(
  deps: ApiDeps,
  tenantId: TenantId,
  requestedBy: string,
  requestId: string,
  waitMs: number,
): Promise<{ readonly outcome: "deployed" | "requested"; readonly requestSeq: number } & DeployView> {
  if (!tenantSettingsOf(deps.config, tenantId).worker)
    throw new DroverError("worker-version-unknown", `tenant ${tenantId} has no worker configured: nothing to deploy`, {
      details: { tenantId },
    });
  const ref = workerDeploysRef(tenantId);
  let requestSeq: number | undefined;
  for (let attempt = 1; requestSeq === undefined; attempt++) {
    const expectedSeq = await deps.store.lastSeq(ref);
    const event = buildEvent(
      "worker.deploy-requested",
      { requestedBy },
      {
        tenantId,
        correlationId: `worker-deploy:${tenantId}`,
        causationId: `http-request:${requestId}`,
        writer: { service: "api", instanceId: deps.instanceId },
      },
      { eventId: `ev-${deps.newId()}`, now: deps.clock.now() },
    );
    try {
      const msgId = `${aggregateSubject(deps.layout, ref)}:${event.eventId}`;
      requestSeq = (await deps.store.append(ref, event, { expectedSeq, msgId })).seq;
    } catch (e) {
      // Another request or deploy landed first: ours still has to be recorded, after it.
      if (!isDroverError(e, "version-conflict") || attempt >= ATTEMPTS) throw e;
    }
  }
  // Counted in polls, not read from the clock (tests run the API on a fixed clock).
  for (let poll = 0; ; poll++) {
    const s = await readDeploys(deps.store, tenantId);
    if (s.deployed && s.deployed.seq > requestSeq)
      return { outcome: "deployed", requestSeq, ...deployView(tenantId, s) };
    if (poll * POLL_MS >= waitMs) return { outcome: "requested", requestSeq, ...deployView(tenantId, s) };
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
