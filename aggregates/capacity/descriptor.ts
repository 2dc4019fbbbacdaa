import type { DataOf, ReadinessLayer, RuntimeInstanceId, StoredHeartbeat } from "../../contracts/index.ts";

/** Lifecycle of a runtime as capacity sees it; it only moves forward (rank order). */
export const LIFECYCLE = ["registered", "ready", "draining", "suspected", "fenced", "retired"] as const;
export type Lifecycle = (typeof LIFECYCLE)[number];
export const rankOf = (s: Lifecycle): number => LIFECYCLE.indexOf(s);

export type Registration = DataOf<"runtime.registered">;
export type HostFacts = DataOf<"runtime.host-started">;
export type EndpointFacts = DataOf<"runtime.endpoint-published">;

/**
 * One runtime's capacity descriptor: a projection nobody writes directly. Each field group has one
 * owning event type (admission-and-capacity.md table) and merges so that no interleaving of the
 * publisher's events and the runtime's heartbeats can make it less routable before `fenced`.
 */
export interface CapacityDescriptor {
  readonly runtimeInstanceId: RuntimeInstanceId;
  /** Set once by `registered`; a later conflicting registration is kept out and reported. */
  readonly registration?: Registration;
  /** Highest lifecycle reached (forward only). */
  readonly status: Lifecycle;
  /** Set once per incarnation by `host-started`. */
  readonly host?: HostFacts;
  /** Layers passed by the current incarnation (grow-only). */
  readonly layers: readonly ReadinessLayer[];
  /** Set by the host publisher only; hidden once fenced/retired (see `visibleEndpoint`). */
  readonly endpoint?: EndpointFacts;
  readonly capacityPublished: boolean;
  /** Highest beat seen per host incarnation: order by beat, never by arrival. */
  readonly beats: Readonly<Record<string, StoredHeartbeat>>;
  readonly incidentId?: string;
  /** Conflicts the fold refused to apply, for operators. */
  readonly conflicts: readonly string[];
  /** Highest stream sequence folded into this descriptor (for idempotent projection). */
  readonly lastSeq: number;
}

export const emptyDescriptor = (runtimeInstanceId: RuntimeInstanceId): CapacityDescriptor => ({
  runtimeInstanceId,
  status: "registered",
  layers: [],
  capacityPublished: false,
  beats: {},
  conflicts: [],
  lastSeq: 0,
});

/** The heartbeat of the current incarnation, if any. Beats of other incarnations never count. */
export function currentBeat(d: CapacityDescriptor): StoredHeartbeat | undefined {
  return d.host ? d.beats[d.host.hostIncarnation] : undefined;
}

/** The endpoint, unless the runtime is fenced or retired (the only events that clear it). */
export function visibleEndpoint(d: CapacityDescriptor): EndpointFacts | undefined {
  return rankOf(d.status) >= rankOf("fenced") ? undefined : d.endpoint;
}
