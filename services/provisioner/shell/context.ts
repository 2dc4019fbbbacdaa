import type { BuildWorker } from "../../../platform/hosts/worker-builds.ts";
import type { Clock } from "../../../platform/clock.ts";
import {
  buildEvent,
  type EgressByTenant,
  type DataOf,
  type EventOf,
  type EventType,
  type HostProvider,
  type StoredHeartbeat,
  type TenantSettings,
  type TenantId,
} from "../../../contracts/index.ts";
import type { HostStrategy } from "../../../platform/hosts/types.ts";
import type { EventStore, StreamLayout } from "../../../streams/index.ts";
import type { ProbeResult, ProbeTarget } from "./command-probe.ts";
import type { RosterOptions } from "./roster-view.ts";

/** Everything the provisioner's shell needs; main.ts builds it, tests build it with their own clock and strategies. */
export interface ProvisionerDeps {
  readonly store: EventStore;
  readonly layout: StreamLayout;
  readonly strategies: ReadonlyMap<HostProvider, HostStrategy>;
  /** This provisioner process (written into `observed` and every envelope). */
  readonly instanceId: string;
  /** What runtimes connect to: NATS and the stream layout tag (tests). */
  readonly natsUrl: string;
  /** NATS_CA_FILE handed to process runtimes when NATS speaks TLS (docs/nats-identities.md "TLS"). */
  readonly natsCaFile?: string;
  /** The NATS_CREDS a runtime starts with (nats-auth/runtime-rights.ts); absent on an open server. */
  readonly natsCredsFor?: (runtimeInstanceId: string) => string;
  readonly streamTag?: string;
  readonly heartbeatMs?: number;
  readonly llmBaseUrl?: string;
  /** The tenant's settings from this provisioner's configuration (worker, secret source). */
  readonly tenantSettings?: (tenantId: string) => TenantSettings;
  /**
   * Every configured tenant's egress settings (http/llm steps). An owned runtime gets its tenant's
   * entry, a shared runtime every entry: it runs several tenants' steps, each under its own policy.
   */
  readonly egress?: EgressByTenant;
  /**
   * Builds (or, for a pinned version, finds) a tenant's worker for process hosts: the file runtimes
   * import and its version (docs/worker-versions.md). Absent: runtimes import the source (`sourceWorker`).
   */
  readonly buildWorker?: BuildWorker;
  /**
   * The runtime image of Kubernetes hosts (`kubernetes.runtimeImage`): what warm pool members run,
   * and a tenant worker's image unless its settings name `worker.image`. A digest reference versions
   * the worker (docs/worker-versions.md).
   */
  readonly kubernetesImage?: string;
  /** The provisioner's environment, read for secrets a tenant's settings source from it. */
  readonly secretEnv?: Readonly<Record<string, string | undefined>>;
  readonly clock: Clock;
  readonly newEventId: () => string;
  /** 12 random [a-z0-9]: the unique part of a new RuntimeInstanceId. */
  readonly newSuffix: () => string;
  /** The per-instance command token of a runtime (platform/command-token.ts). */
  readonly commandTokenFor: (runtimeInstanceId: string) => string;
  /** Budget of the `command` readiness probe. */
  readonly probeBudgetMs: number;
  /** Budget of a kill during clean-up. */
  readonly killBudgetMs: number;
  /** Parallel host starts in this process (DroverConfig.maxConcurrentHostStartups). */
  readonly maxConcurrentHostStartups: number;
  readonly log: (msg: string, fields?: Record<string, unknown>) => void;
  /** Warm pool size per host provider (DroverConfig.warmPool); absent or 0: every runtime cold-starts. */
  readonly poolSizes?: Partial<Record<HostProvider, number>>;
  /** The control plane pool members are registered for (required when a pool size is above 0). */
  readonly controlPlaneId?: string;
  /** The `command` layer's probe (default: a real GetQueueStatus, command-probe.ts); replaced only by shell tests that prove no transport. */
  readonly probe?: (target: ProbeTarget, budgetMs: number) => Promise<ProbeResult>;
  /** The roster's snapshot and memory bound (roster-view.ts); absent: folded from sequence 1, unbounded. */
  readonly roster?: RosterOptions;
  /**
   * A runtime's last heartbeat as stored (drained-exit.ts `lastBeatReader`): whether an exit it
   * observes ends a drain (a stop from outside drover). Absent: every exit is recorded as `host-exited`.
   */
  readonly latestBeat?: (runtimeInstanceId: string) => Promise<StoredHeartbeat | undefined>;
}

/** Who writes and why: every event the provisioner appends for one request shares its correlation. */
export interface Origin {
  readonly instanceId: string;
  /** The scale-out request id: ties the runtime's events to the request that created it. */
  readonly correlationId: string;
  /** The `requested` event's id. */
  readonly causationId: string;
  /** Required on scale-out events; on runtime events only for an owned (dedicated/hybrid) runtime. */
  readonly tenantId?: TenantId | undefined;
}

/** Builds an event for `origin`, written by this provisioner, with the injected clock and id. */
export const stamp = <T extends EventType>(d: ProvisionerDeps, type: T, data: DataOf<T>, o: Origin): EventOf<T> =>
  buildEvent(
    type,
    data,
    { writer: { service: "provisioner", instanceId: o.instanceId }, ...pick(o) },
    { now: d.clock.now(), eventId: d.newEventId() },
  );

const pick = ({ correlationId, causationId, tenantId }: Origin) => ({ correlationId, causationId, tenantId });
