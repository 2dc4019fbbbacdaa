import {
  ScaleOutRequestId,
  runtimePrefixOf,
  sizingOf,
  type DataOf,
  type DroverConfig,
  type Reason,
  type RuntimeInstanceId,
  type TenantSettings,
  type WorkerVersion,
} from "../contracts/index.ts";

/**
 * Single-flight scale-out, shared by every service that asks for a runtime (admission for a queued run,
 * recovery for the replacement of a fenced runtime): one dedupe key, one deterministic request id per
 * key and generation, one planner. Whoever appends first (conditional on the aggregate not existing)
 * makes the request; the others find it open and wait for it. Pure.
 */

/** What a requester knows of earlier scale-out requests with one dedupe key. */
export interface KnownRequest {
  readonly requestId: string;
  readonly status: string;
  readonly endedMs?: number;
  /** A fulfilled request whose runtime is already suspected, fenced or retired: it will never become routable. */
  readonly runtimeGone?: boolean;
  /** The request's own expiry (`expiresAt`): past it, an open request no longer holds the key. */
  readonly expiresMs?: number;
  /** When it was requested (its `requested` event's time). */
  readonly requestedMs?: number;
  /** The reason code of its rejection, when rejected. */
  readonly rejectedCode?: string;
}

/** The provisioner's rejection of a request that would pass the tenant's `maxRuntimeInstances`. */
export const LIMIT_REACHED = "scale-out-limit-reached";

export type ScaleOutPlan =
  | { readonly kind: "wait-for"; readonly requestId: string }
  | { readonly kind: "hold" }
  | { readonly kind: "request"; readonly generation: number };

/** After a rejection or expiry, wait this long before asking again (no request storm at a limit). */
export const SCALE_OUT_RETRY_MS = 10_000;
const fulfilledGraceMs = (heartbeatIntervalMs: number) => Math.max(1000, 3 * heartbeatIntervalMs);

/**
 * The dedupe key (admission-and-capacity.md step 5): control plane + tenant + prefix + reason, and the
 * worker version for runs pinned to one (a runtime of the current version cannot take them).
 */
export function scaleOutDedupeKey(
  controlPlaneId: string,
  tenant: TenantSettings,
  reasonCode: string,
  workerVersion?: WorkerVersion,
): string {
  const pinned = workerVersion ? `:worker-${workerVersion}` : "";
  return `${controlPlaneId}:${tenant.tenantId}:${runtimePrefixOf(tenant)}:${reasonCode}${pinned}`;
}

/** The request id of a key's generation: every requester that knows the same history proposes the same id. */
export function scaleOutRequestIdOf(sha256: (s: string) => string, dedupeKey: string, generation: number) {
  return ScaleOutRequestId.parse(`so-${sha256(`${dedupeKey}:${generation}`).slice(0, 24)}`);
}

/** The `scaleout.requested` data for a tenant (sizing precedence: tenant settings > request > defaults). */
export function scaleOutRequestData(
  config: Pick<DroverConfig, "controlPlaneId" | "scaleOutExpiryMs">,
  tenant: TenantSettings,
  requestId: ScaleOutRequestId,
  dedupeKey: string,
  reason: Reason,
  now: number,
  workerVersion?: WorkerVersion,
  replaces?: RuntimeInstanceId,
): DataOf<"scaleout.requested"> {
  return {
    requestId,
    controlPlaneId: config.controlPlaneId,
    dedupeKey,
    reason,
    policy: {
      isolationMode: tenant.isolationMode,
      ...(tenant.tenantGroupId ? { tenantGroupId: tenant.tenantGroupId } : {}),
      allowSharedFallback: tenant.allowSharedFallback,
      runtimeInstanceIdPrefix: runtimePrefixOf(tenant),
      maxRuntimeInstances: tenant.maxRuntimeInstances,
    },
    sizing: sizingOf(tenant),
    providerHint: tenant.hostProvider,
    transport: tenant.transport,
    expiresAt: new Date(now + config.scaleOutExpiryMs).toISOString(),
    ...(workerVersion ? { workerVersion } : {}),
    ...(replaces ? { replaces } : {}),
  };
}

/**
 * The plan (pure): while a request with the key is open, every run waits for it; after
 * one ended, hold for a grace (a fulfilled runtime needs its first heartbeats to become routable; a
 * rejected one backs off; no grace for a fulfilled runtime that is already gone, so a crash right
 * after a scale-out does not delay its replacement); otherwise make the next generation. The id is a hash of the key and the
 * generation, so concurrent requesters that know the same history propose the same request.
 * A tenant that may never grow (`maxRuntimeInstances` 0) asks for nothing: admission requests a
 * scale-out only "if the tenant may grow" (admission-and-capacity.md step 5). Being at a positive
 * limit is the provisioner's call (it counts by prefix), answered with a rejection and the back-off.
 * An open request past its own expiry counts as ended there (back-off as after a rejection): the
 * provisioner expires such a request only while a delivery of it is handled, and one whose
 * deliveries ran out (its handlers killed one after another, `maxDeliver`) stays open in the log
 * for ever; waiting for it held a tenant's queue until the end of a chaos proof.
 * `lostMs`: when a runtime counted toward the tenant's limit was lost (recovery, replacing it). A
 * `scale-out-limit-reached` rejection of a request made before then counted that runtime: it says
 * nothing of the limit now and holds nothing (a rejection just before a kill held the replacement
 * for the whole back-off). A request made after the loss and rejected at the limit backs off as before.
 */
export function planScaleOut(
  known: readonly KnownRequest[],
  now: number,
  heartbeatIntervalMs: number,
  maxRuntimeInstances: number,
  lostMs?: number,
): ScaleOutPlan {
  if (maxRuntimeInstances <= 0) return { kind: "hold" };
  const isOpen = (s: KnownRequest) => s.status === "requested" || s.status === "observed";
  const lapsed = (s: KnownRequest) => s.expiresMs !== undefined && now > s.expiresMs;
  const open = known.find((s) => isOpen(s) && !lapsed(s));
  if (open) return { kind: "wait-for", requestId: open.requestId };
  const countedTheLoss = (s: KnownRequest) =>
    s.rejectedCode === LIMIT_REACHED && lostMs !== undefined && s.requestedMs !== undefined && s.requestedMs < lostMs;
  const holdsUntil = (s: KnownRequest) =>
    countedTheLoss(s)
      ? 0
      : isOpen(s)
        ? s.expiresMs! + SCALE_OUT_RETRY_MS
        : s.status !== "fulfilled"
          ? (s.endedMs ?? 0) + SCALE_OUT_RETRY_MS
          : s.runtimeGone
            ? 0
            : (s.endedMs ?? 0) + fulfilledGraceMs(heartbeatIntervalMs);
  const waitUntil = Math.max(0, ...known.map(holdsUntil));
  return now < waitUntil ? { kind: "hold" } : { kind: "request", generation: known.length };
}
