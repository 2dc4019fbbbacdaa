import {
  isDroverError,
  runtimePrefixOf,
  sizingOf,
  type Reason,
  type TenantSettings,
} from "../../../contracts/index.ts";
import { envelope } from "../../../platform/envelope.ts";
import { scaleOutRef } from "../../../streams/index.ts";
import { planScaleOut } from "../domain/single-flight.ts";
import type { Placeable } from "./candidates.ts";
import type { AdmissionDeps } from "./deps.ts";

const GONE = new Set(["suspected", "fenced", "retired"]);

/**
 * Single-flight scale-out (admission-and-capacity.md step 5): the dedupe key is control plane +
 * tenant + prefix + reason; the request id is a hash of the key and its generation (how many
 * requests with that key have ended), so concurrent admissions converge on one request (the append
 * expects the aggregate not to exist; a conflict means another replica made it). While a request is
 * open, or ended recently, no new one is made. Returns the request id the run should wait on, if any.
 */
export async function requestScaleOut(
  deps: AdmissionDeps,
  tenant: TenantSettings,
  reason: Reason,
  causationId: string,
  candidates: readonly Placeable[],
): Promise<string | undefined> {
  const prefix = runtimePrefixOf(tenant);
  const dedupeKey = `${deps.config.controlPlaneId}:${tenant.tenantId}:${prefix}:${reason.code}`;
  const gone = new Set(candidates.filter((c) => GONE.has(c.status)).map((c) => c.runtimeInstanceId));
  const mine = [...deps.index.scaleOuts.values()]
    .filter((s) => s.dedupeKey === dedupeKey)
    .map((s) => ({ ...s, runtimeGone: s.runtimeInstanceId !== undefined && gone.has(s.runtimeInstanceId) }));
  const now = deps.env.clock.now().getTime();
  const plan = planScaleOut(mine, now, deps.config.heartbeatIntervalMs, tenant.maxRuntimeInstances);
  if (plan.kind === "wait-for") return plan.requestId;
  if (plan.kind === "hold") return undefined;
  const requestId = `so-${deps.sha256(`${dedupeKey}:${plan.generation}`).slice(0, 24)}`;
  const data = {
    requestId,
    controlPlaneId: deps.config.controlPlaneId,
    dedupeKey,
    reason,
    policy: {
      isolationMode: tenant.isolationMode,
      ...(tenant.tenantGroupId ? { tenantGroupId: tenant.tenantGroupId } : {}),
      allowSharedFallback: tenant.allowSharedFallback,
      runtimeInstanceIdPrefix: prefix,
      maxRuntimeInstances: tenant.maxRuntimeInstances,
    },
    sizing: sizingOf(tenant),
    providerHint: tenant.hostProvider,
    transport: tenant.transport,
    expiresAt: new Date(now + deps.config.scaleOutExpiryMs).toISOString(),
  };
  const event = envelope(deps.env, "scaleout.requested", data, {
    tenantId: tenant.tenantId,
    correlationId: requestId,
    causationId,
  });
  try {
    await deps.store.append(scaleOutRef(tenant.tenantId, requestId), event, { expectedSeq: 0 });
  } catch (e) {
    if (!isDroverError(e, "version-conflict")) throw e;
  }
  deps.index.scaleOuts.set(requestId, { tenantId: tenant.tenantId, requestId, dedupeKey, status: "requested" });
  return requestId;
}
