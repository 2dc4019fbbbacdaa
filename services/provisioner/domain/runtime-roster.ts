import type {
  DroverEvent,
  HostProvider,
  ReadinessLayer,
  RuntimeWorker,
  TenantId,
  Transport,
} from "../../../contracts/index.ts";
import { assertNever } from "../../../contracts/assert-never.ts";

export type RuntimeEvent = Extract<DroverEvent, { type: `runtime.${string}` }>;

/** Why a runtime no longer counts against its tenant's limit. */
export type EndedBy = "host-start-failed" | "host-exited" | "fenced" | "retired";

/** What the provisioner needs to know about one runtime: who it is for, how far its start got, whether it ended. */
export interface RuntimeSummary {
  readonly runtimeInstanceId: string;
  readonly tenantId?: TenantId;
  readonly scaleOutRequestId?: string;
  /** The tenant worker it runs (`registered.worker`): its version decides when it drains and retires. */
  readonly worker?: RuntimeWorker;
  readonly transport?: Transport;
  /** Its command endpoint (`endpoint-published`), where the retire check asks its queue status. */
  readonly endpoint?: string;
  readonly hostIncarnation?: string;
  readonly pid?: number;
  /** Where its host runs (a process host's process space; a Pod's node). */
  readonly node?: string;
  /** A Pod host's exact Pod (a claimed warm pool member's host-started repeats it: the kill needs the name). */
  readonly pod?: { readonly podUid: string; readonly podName: string; readonly namespace: string };
  readonly capacityPublished: boolean;
  /** The first reason it ended; later endings are evidence only. */
  readonly endedBy?: EndedBy;
  /** Recovery suspected it (`suspected`): it never serves again, fenced or not, so it frees its tenant's place. */
  readonly suspected?: boolean;
  readonly retired: boolean;
  /** Set for a warm pool member (domain/warm-pool.ts): never a tenant's runtime, never counted by prefix. */
  readonly pool?: PoolMemberFacts;
  readonly lastSeq: number;
}

/** What a warm pool member has proven, and whom it was claimed for. */
export interface PoolMemberFacts {
  readonly provider: HostProvider;
  /** The control plane whose provisioner started it: another control plane's pool is not ours to count or claim. */
  readonly controlPlaneId: string;
  readonly pool: string;
  readonly requiredLayers: readonly ReadinessLayer[];
  readonly layersPassed: readonly ReadinessLayer[];
  /** Set by `pool-member-ready`: every required layer passed, the binding goes here. */
  readonly bindEndpoint?: string;
  readonly claimedFor?: string;
}

/** Every runtime of the control plane, folded from `drover.runtime.*.*` in stream order. */
export interface Roster {
  readonly runtimes: ReadonlyMap<string, RuntimeSummary>;
  readonly lastSeq: number;
}

export const emptyRoster = (): Roster => ({ runtimes: new Map(), lastSeq: 0 });

/** Folds a runtime event into its summary. Idempotent by sequence (replays and redeliveries are no-ops). */
export function evolveRuntime(s: RuntimeSummary | undefined, id: string, seq: number, e: RuntimeEvent): RuntimeSummary {
  const base: RuntimeSummary = s ?? { runtimeInstanceId: id, capacityPublished: false, retired: false, lastSeq: 0 };
  if (seq <= base.lastSeq) return base;
  const at = { ...base, lastSeq: seq };
  const end = (by: EndedBy): RuntimeSummary => (base.endedBy ? at : { ...at, endedBy: by });
  switch (e.type) {
    case "runtime.registered":
      return {
        ...at,
        tenantId: e.data.tenantId,
        scaleOutRequestId: e.data.scaleOutRequestId,
        transport: e.data.transport,
        ...(e.data.worker ? { worker: e.data.worker } : {}),
      };
    case "runtime.host-started":
      return base.hostIncarnation
        ? at
        : {
            ...at,
            hostIncarnation: e.data.hostIncarnation,
            pid: e.data.pid,
            node: e.data.node,
            ...(e.data.podUid && e.data.podName && e.data.namespace
              ? { pod: { podUid: e.data.podUid, podName: e.data.podName, namespace: e.data.namespace } }
              : {}),
          };
    case "runtime.capacity-published":
      return { ...at, capacityPublished: true };
    case "runtime.host-start-failed":
      return end("host-start-failed");
    case "runtime.host-exited":
      return end("host-exited");
    case "runtime.fenced":
      return end("fenced");
    case "runtime.retired":
      return { ...end("retired"), retired: true };
    case "runtime.pool-member-registered":
      return {
        ...at,
        pool: {
          provider: e.data.hostProvider,
          controlPlaneId: e.data.controlPlaneId,
          pool: e.data.pool,
          requiredLayers: e.data.requiredLayers,
          layersPassed: [],
        },
      };
    case "runtime.readiness-layer-passed":
      return base.pool &&
        base.hostIncarnation === e.data.hostIncarnation &&
        !base.pool.layersPassed.includes(e.data.layer)
        ? { ...at, pool: { ...base.pool, layersPassed: [...base.pool.layersPassed, e.data.layer] } }
        : at;
    case "runtime.pool-member-ready":
      return base.pool && base.hostIncarnation === e.data.hostIncarnation
        ? { ...at, pool: { ...base.pool, bindEndpoint: e.data.bindEndpoint } }
        : at;
    case "runtime.pool-member-claimed":
      return base.pool && !base.pool.claimedFor
        ? { ...at, pool: { ...base.pool, claimedFor: e.data.runtimeInstanceId } }
        : at;
    case "runtime.endpoint-published":
      return base.hostIncarnation === e.data.hostIncarnation ? { ...at, endpoint: e.data.endpoint } : at;
    case "runtime.suspected":
      return { ...at, suspected: true };
    case "runtime.host-start-requested":
    case "runtime.draining":
    case "runtime.recovery-planned":
    case "runtime.fence-failed":
      return at;
    default:
      return assertNever(e, "runtime event");
  }
}

/** Folds one stored runtime event into the roster. */
export function evolveRoster(r: Roster, seq: number, runtimeInstanceId: string, e: RuntimeEvent): Roster {
  if (seq <= r.lastSeq) return r;
  const runtimes = new Map(r.runtimes);
  runtimes.set(runtimeInstanceId, evolveRuntime(r.runtimes.get(runtimeInstanceId), runtimeInstanceId, seq, e));
  return { runtimes, lastSeq: seq };
}

/**
 * Whether `id` was allocated under `prefix`: `<prefix>-<suffix>` where the suffix has no dash
 * (see runtime-id.ts). The dash-free suffix keeps prefixes exact: tenant `a` never counts
 * tenant `a-b`'s runtime `a-b-xyz`.
 */
export const hasPrefix = (id: string, prefix: string): boolean =>
  id.startsWith(`${prefix}-`) && /^[a-z0-9]+$/.test(id.slice(prefix.length + 1));

/**
 * A tenant's live runtimes, counted by its prefix (never the global count): registered and not
 * ended. A runtime whose host exited no longer counts: nothing runs there, and its tenant needs a
 * replacement while recovery fences it. Nor does one recovery suspected: it never serves again, and
 * recovery asks for its replacement as the fence begins (a lost connection can be suspected before
 * the Pod watch records the exit; counted, the replacement was rejected at the limit and waited
 * for its back-off, ~10 s).
 */
export const liveByPrefix = (r: Roster, prefix: string): RuntimeSummary[] =>
  [...r.runtimes.values()].filter(
    (s) => !s.pool && hasPrefix(s.runtimeInstanceId, prefix) && s.endedBy === undefined && !s.suspected,
  );

/** Runtimes registered for one scale-out request: the attempts of earlier deliveries. */
export const runtimesOfRequest = (r: Roster, requestId: string): RuntimeSummary[] =>
  [...r.runtimes.values()].filter((s) => s.scaleOutRequestId === requestId);
