import {
  BUILTIN_STEP_KINDS,
  type DataOf,
  type HostProvider,
  type ReadinessLayer,
  type Reason,
} from "../../../contracts/index.ts";
import type { RequestState } from "./request-state.ts";
import { liveByPrefix, runtimesOfRequest, type Roster, type RuntimeSummary } from "./runtime-roster.ts";
import { runtimeInstanceIdOf } from "./runtime-id.ts";

/** Layers a runtime must pass before capacity is published, per host provider (hosts.md "Readiness layers"). */
export const REQUIRED_LAYERS: Readonly<Record<HostProvider, readonly ReadinessLayer[]>> = {
  process: ["resource", "host", "endpoint", "command"],
  kubernetes: ["resource", "host", "endpoint", "command"],
};

export interface PlanInput {
  /** The request as read after this provisioner's own `observed`. */
  readonly request: RequestState;
  readonly roster: Roster;
  /** Injected clock. */
  readonly now: Date;
  /** Injected random suffix, used only if a runtime is started. */
  readonly suffix: string;
  /** Host providers this provisioner has a strategy for. */
  readonly providers: readonly HostProvider[];
  /** Handlers of the tenant's worker (its settings, never the request): an owned runtime offers them. */
  readonly workerKinds?: readonly string[];
}

export type Next =
  | { readonly kind: "fulfil"; readonly runtimeInstanceId: string }
  | { readonly kind: "expire" }
  | { readonly kind: "reject"; readonly reason: Reason }
  | {
      readonly kind: "start";
      readonly runtimeInstanceId: string;
      readonly registration: DataOf<"runtime.registered">;
      /** Live runtimes of the prefix counted (not this one): recorded on the prefix's `runtime-slot-taken`. */
      readonly live: number;
    };

export interface Plan {
  /** Earlier attempts at this request that never proved their host: retire them (and kill their host) first. */
  readonly abandon: readonly RuntimeSummary[];
  readonly next: Next;
}

/**
 * What to do with an open scale-out request (pure). In order:
 * 1. an earlier attempt already published capacity (its provisioner died before `fulfilled`):
 *    fulfil with it, nothing else;
 * 2. earlier attempts that did not publish are abandoned (a registered runtime whose host is not
 *    proven is cleaned up, never re-driven: its host may be half-started by a process we cannot ask);
 * 3. past `expiresAt`: expire;
 * 4. no strategy for the provider: reject `host-config-missing`;
 * 5. the tenant's live runtimes by prefix (not counting the abandoned ones) at `maxRuntimeInstances`:
 *    reject `scale-out-limit-reached`;
 * 6. otherwise start a new runtime `<prefix>-<suffix>` registered from the request's policy. The
 *    caller makes the count hold across replicas: the start is appended with the prefix's
 *    `quota runtime-slot-taken`, conditional on that aggregate's sequence read before the roster.
 * Throws when the request is not open (callers check `isTerminal` first) or the suffix is invalid.
 */
export function planRequest(input: PlanInput): Plan {
  const { request: s, roster } = input;
  const req = s.request;
  if (!req || s.status !== "requested") throw new Error(`request is ${s.status}, not open`);
  const earlier = runtimesOfRequest(roster, req.requestId).filter((r) => r.endedBy === undefined);
  const published = earlier.find((r) => r.capacityPublished);
  if (published) return { abandon: [], next: { kind: "fulfil", runtimeInstanceId: published.runtimeInstanceId } };
  const abandon = earlier;
  const plan = (next: Next): Plan => ({ abandon, next });
  if (input.now.getTime() >= Date.parse(req.expiresAt)) return plan({ kind: "expire" });
  if (!input.providers.includes(req.providerHint)) {
    return plan({
      kind: "reject",
      reason: {
        code: "host-config-missing",
        detail: `no ${req.providerHint} host strategy is configured in this provisioner`,
      },
    });
  }
  const prefix = req.policy.runtimeInstanceIdPrefix;
  const abandoned = new Set(abandon.map((r) => r.runtimeInstanceId));
  const live = liveByPrefix(roster, prefix).filter((r) => !abandoned.has(r.runtimeInstanceId));
  if (live.length >= req.policy.maxRuntimeInstances) {
    return plan({
      kind: "reject",
      reason: {
        code: "scale-out-limit-reached",
        detail: `${live.length} live runtimes with prefix ${prefix}, limit ${req.policy.maxRuntimeInstances}`,
      },
    });
  }
  const runtimeInstanceId = runtimeInstanceIdOf(prefix, input.suffix);
  const shared = req.policy.isolationMode === "shared";
  const registration = {
    controlPlaneId: req.controlPlaneId,
    // A shared runtime has no owner (visibility rules); dedicated and hybrid ones belong to the requesting tenant.
    ...(shared ? {} : { tenantId: s.tenantId }),
    ...(req.policy.tenantGroupId ? { tenantGroupId: req.policy.tenantGroupId } : {}),
    isolationMode: req.policy.isolationMode,
    allowSharedFallback: req.policy.allowSharedFallback,
    pool: "default",
    hostProvider: req.providerHint,
    transport: req.transport,
    sizing: req.sizing,
    requiredLayers: [...REQUIRED_LAYERS[req.providerHint]],
    scaleOutRequestId: req.requestId,
    // A shared runtime serves several tenants, so it runs built-in kinds only (docs/sdk.md "Isolation").
    stepKinds: [...BUILTIN_STEP_KINDS, ...(shared ? [] : (input.workerKinds ?? []).map((k) => `custom:${k}`))].sort(),
  } satisfies DataOf<"runtime.registered">;
  return plan({ kind: "start", runtimeInstanceId, registration, live: live.length });
}
