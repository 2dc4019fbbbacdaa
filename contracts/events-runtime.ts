import { z } from "zod";
import { defineEvent } from "./define-event.ts";
import {
  ControlPlaneId,
  ExecutionId,
  ForensicsId,
  HostIncarnation,
  LocalRunId,
  RuntimeFailureIncidentId,
  RuntimeInstanceId,
  ScaleOutRequestId,
  SharedRunId,
  TenantGroupId,
  TenantId,
} from "./ids.ts";
import { Reason } from "./reason.ts";
import { HostProvider, IsolationMode, RuntimeSizing, RuntimeWorker, Transport } from "./tenant-settings.ts";

export const READINESS_LAYERS = ["resource", "host", "endpoint", "command", "route", "published"] as const;
export const ReadinessLayer = z.enum(READINESS_LAYERS);
export type ReadinessLayer = z.infer<typeof ReadinessLayer>;

/** Runtime (host lifecycle) events on `drover.runtime.<runtimeInstanceId>.<event>`. */
export const RuntimeRegistered = defineEvent("runtime", "registered", () =>
  z
    .object({
      controlPlaneId: ControlPlaneId,
      tenantId: TenantId.optional().describe("owner; absent for a shared runtime"),
      tenantGroupId: TenantGroupId.optional(),
      isolationMode: IsolationMode,
      allowSharedFallback: z.boolean(),
      pool: z.string().max(63).default("default"),
      hostProvider: HostProvider,
      transport: Transport,
      sizing: RuntimeSizing,
      requiredLayers: z.array(ReadinessLayer).min(1),
      scaleOutRequestId: ScaleOutRequestId.optional(),
      stepKinds: z
        .array(z.string().regex(/^(?:[a-z]+|custom:[a-z0-9-]{1,63})$/))
        .max(300)
        .optional()
        .describe("step kinds the runtime runs (built-ins, custom:<handler>); absent: the built-ins"),
      worker: RuntimeWorker.optional().describe("the tenant worker this runtime runs; absent: none (built-ins only)"),
    })
    .strict(),
);
export const RuntimeHostStartRequested = defineEvent("runtime", "host-start-requested", () =>
  z.object({ attempt: z.number().int().positive() }).strict(),
);
export const RuntimeHostStarted = defineEvent("runtime", "host-started", () =>
  z
    .object({
      hostIncarnation: HostIncarnation,
      pid: z.number().int().positive().optional(),
      podUid: z.string().max(64).optional(),
      podName: z.string().max(253).optional(),
      namespace: z.string().max(63).optional(),
      node: z.string().max(253).optional(),
      convergence: z.enum(["created", "converged"]),
      convergenceSource: z.string().max(100).optional(),
    })
    .strict(),
);
export const RuntimeHostStartFailed = defineEvent("runtime", "host-start-failed", () =>
  z.object({ reason: Reason, layer: ReadinessLayer.optional() }).strict(),
);
export const RuntimeReadinessLayerPassed = defineEvent("runtime", "readiness-layer-passed", () =>
  z
    .object({
      layer: ReadinessLayer,
      hostIncarnation: HostIncarnation,
      detail: z.string().max(500).default(""),
    })
    .strict(),
);
export const RuntimeEndpointPublished = defineEvent("runtime", "endpoint-published", () =>
  z
    .object({
      endpoint: z.string().min(1).max(500).describe("base URL (http://host:port) or host:port for gRPC"),
      aliases: z.array(z.string().max(500)).max(8).default([]),
      route: z
        .object({ kind: z.enum(["HTTPRoute", "GRPCRoute"]), name: z.string().max(253), namespace: z.string().max(63) })
        .strict()
        .optional(),
      routingHeader: z.literal("x-drover-runtime-instance-id"),
      hostIncarnation: HostIncarnation,
    })
    .strict(),
);
export const RuntimeCapacityPublished = defineEvent("runtime", "capacity-published", () =>
  z.object({ hostIncarnation: HostIncarnation }).strict(),
);
export const RuntimeDraining = defineEvent("runtime", "draining", () =>
  z.object({ reason: z.string().max(500).default("") }).strict(),
);
export const RuntimeSuspected = defineEvent("runtime", "suspected", () =>
  z
    .object({
      incidentId: RuntimeFailureIncidentId,
      reason: Reason,
      hostIncarnation: HostIncarnation.optional(),
    })
    .strict(),
);
/** How a host boundary was proven: the process reaped, or the Pod UID gone. */
export const FenceProof = z.discriminatedUnion("kind", [
  z
    .object({
      kind: z.literal("process-exit"),
      pid: z.number().int().positive(),
      exitCode: z.number().int().nullable(),
      signal: z.string().nullable(),
    })
    .strict(),
  z
    .object({
      kind: z.literal("pod-uid-gone"),
      podUid: z.string().max(64),
      podName: z.string().max(253),
      namespace: z.string().max(63),
      observedBy: z.string().max(100),
    })
    .strict(),
]);
export type FenceProof = z.infer<typeof FenceProof>;
export const RuntimeFenced = defineEvent("runtime", "fenced", () =>
  z
    .object({
      incidentId: RuntimeFailureIncidentId,
      hostIncarnation: HostIncarnation,
      proof: FenceProof,
    })
    .strict(),
);
export const RecoveryClass = z.enum(["in-flight-execution", "local-queued"]);
export type RecoveryClass = z.infer<typeof RecoveryClass>;
export const RuntimeRecoveryPlanned = defineEvent("runtime", "recovery-planned", () =>
  z
    .object({
      incidentId: RuntimeFailureIncidentId,
      items: z
        .array(
          z
            .object({
              forensicsId: ForensicsId,
              tenantId: TenantId,
              sharedRunId: SharedRunId,
              localRunId: LocalRunId,
              executionId: ExecutionId.optional(),
              class: RecoveryClass,
            })
            .strict(),
        )
        .max(10_000),
    })
    .strict(),
);
/** A host fact observed by the host strategy (e.g. the provisioner saw its child exit): evidence for health, not a decision. */
export const RuntimeHostExited = defineEvent("runtime", "host-exited", () =>
  z
    .object({
      hostIncarnation: HostIncarnation,
      kind: z.enum(["exited", "pod-deleted", "container-terminated", "pod-failed"]),
      exitCode: z.number().int().nullable().default(null),
      signal: z.string().max(32).nullable().default(null),
      detail: z.string().max(500).default(""),
    })
    .strict(),
);
/** The host boundary could not be proven before the deadline: the incident stays open, no work moves, an operator is told why. */
export const RuntimeFenceFailed = defineEvent("runtime", "fence-failed", () =>
  z
    .object({
      incidentId: RuntimeFailureIncidentId,
      hostIncarnation: HostIncarnation,
      reason: Reason,
      attempt: z.number().int().positive(),
    })
    .strict(),
);
/** A deliberate stop of a runtime's host (its provisioner stopped), with the proof that the exact incarnation is gone. */
export const PlannedStop = z
  .object({
    /** Names the planned stop where an incident id would name a failure (`stop-…`, see plannedStopIdOf). */
    stopId: RuntimeFailureIncidentId,
    reason: Reason,
    hostIncarnation: HostIncarnation,
    proof: FenceProof,
  })
  .strict();
export type PlannedStop = z.infer<typeof PlannedStop>;
export const RuntimeRetired = defineEvent("runtime", "retired", () =>
  z
    .object({
      reason: z.string().max(500).default(""),
      /** Present when the retirement is a deliberate stop whose host boundary was proven: recovery moves the work, no incident. */
      stopped: PlannedStop.optional(),
    })
    .strict(),
);

/**
 * A warm pool member (hosts.md "Warm pool"): a host started ahead of need, tenant-neutral (no
 * tenant, sizing, transport, command token or NATS credential bound). Its readiness layers are
 * recorded on it like a runtime's; it never gets capacity. Sequence 0 of its aggregate.
 */
export const RuntimePoolMemberRegistered = defineEvent("runtime", "pool-member-registered", () =>
  z
    .object({
      controlPlaneId: ControlPlaneId,
      hostProvider: HostProvider,
      pool: z.string().max(63).default("default"),
      requiredLayers: z.array(ReadinessLayer).min(1),
    })
    .strict(),
);
/** The pool member proved every layer it owns and is claimable; `bindEndpoint` takes its one binding. */
export const RuntimePoolMemberReady = defineEvent("runtime", "pool-member-ready", () =>
  z
    .object({
      hostIncarnation: HostIncarnation,
      bindEndpoint: z.string().min(1).max(500).describe("http://host:port the binding is posted to"),
    })
    .strict(),
);
/**
 * The pool member was claimed for one runtime: appended in one atomic batch with that runtime's
 * registration, conditional on the member's last sequence, so of two claimers exactly one wins.
 * A claimed member never returns to the pool: its host now belongs to `runtimeInstanceId`.
 */
export const RuntimePoolMemberClaimed = defineEvent("runtime", "pool-member-claimed", () =>
  z
    .object({
      runtimeInstanceId: RuntimeInstanceId,
      hostIncarnation: HostIncarnation,
      scaleOutRequestId: ScaleOutRequestId,
      tenantId: TenantId.optional().describe("the bound runtime's owner; absent for a shared runtime"),
    })
    .strict(),
);

/** Prefix of the id that names a planned stop in the recovery facts' `incidentId` fields; an incident id is `inc-…`. */
export const PLANNED_STOP_PREFIX = "stop-";
/** Whether an `incidentId` field names a planned stop (no incident) rather than a runtime failure. */
export const isPlannedStopId = (id: string): boolean => id.startsWith(PLANNED_STOP_PREFIX);

export const RUNTIME_EVENTS = [
  RuntimeRegistered,
  RuntimeHostStartRequested,
  RuntimeHostStarted,
  RuntimeHostStartFailed,
  RuntimeReadinessLayerPassed,
  RuntimeEndpointPublished,
  RuntimeCapacityPublished,
  RuntimeDraining,
  RuntimeSuspected,
  RuntimeFenced,
  RuntimeFenceFailed,
  RuntimeRecoveryPlanned,
  RuntimeHostExited,
  RuntimeRetired,
  RuntimePoolMemberRegistered,
  RuntimePoolMemberReady,
  RuntimePoolMemberClaimed,
] as const;
