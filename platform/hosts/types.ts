import type {
  EgressByTenant,
  HostProvider,
  ReadinessLayer,
  Reason,
  RuntimeSizing,
  Transport,
} from "../../contracts/index.ts";

/**
 * The host contract (hosts.md): a host strategy owns host lifecycle only. HTTP/gRPC own command
 * transport, the runtime owns its queue and DAG execution, the control plane owns capacity
 * publication and recovery. Both strategies (process, kubernetes) implement this interface; no SDK
 * type crosses it. It lives in platform/ because the provisioner (start) and recovery (kill,
 * observe) are separate services.
 */
export interface HostSpec {
  readonly controlPlaneId: string;
  readonly runtimeInstanceId: string;
  readonly tenantId?: string;
  readonly tenantGroupId?: string;
  readonly isolationMode: "shared" | "dedicated" | "hybrid";
  readonly transport: Transport;
  readonly sizing: RuntimeSizing;
  /** Per-instance command token, given to the runtime at start (env or Secret). */
  readonly commandToken: string;
  /** Stream layout tag for isolated tests (DROVER_STREAM_TAG); absent in production. */
  readonly streamTag?: string;
  readonly natsUrl: string;
  /** The runtime's own NATS credential (NATS_CREDS, `<id>:<password>`, checked by the auth callout); absent on an open server. */
  readonly natsCreds?: string;
  /** The CA the runtime verifies a TLS nats-server against (NATS_CA_FILE; process hosts: a path on this machine). */
  readonly natsCaFile?: string;
  readonly heartbeatMs?: number;
  readonly llmBaseUrl?: string;
  /** Egress settings of the tenants whose steps this runtime runs (DROVER_EGRESS); absent tenants get the defaults. */
  readonly egress?: EgressByTenant;
  /** The tenant's worker: the module runtimes import and the handlers its settings declare. */
  readonly worker?: { readonly module: string; readonly kinds: readonly string[] };
  /** The tenant's secret file (process hosts), and secrets handed over from the provisioner's environment. */
  readonly secretsFile?: string;
  readonly secrets?: Readonly<Record<string, string>>;
  /** Kubernetes hosts: the tenant's Secret (key `secrets.json`) the Pod reads its secrets from. */
  readonly kubernetesSecret?: string;
  /** Kubernetes hosts: the image the Pod runs instead of the strategy's, its worker version's (docs/worker-versions.md). */
  readonly image?: string;
}

/** Where and how the control plane reaches the runtime, as resolved by the strategy. */
export interface HostEndpoint {
  /** `http://host:port` for HTTP, `host:port` for gRPC. */
  readonly endpoint: string;
  readonly aliases: readonly string[];
  readonly route?: { readonly kind: "HTTPRoute" | "GRPCRoute"; readonly name: string; readonly namespace: string };
}

export interface HostFacts {
  readonly hostIncarnation: string;
  readonly pid?: number;
  readonly podUid?: string;
  readonly podName?: string;
  readonly namespace?: string;
  /**
   * Where the host runs: the Kubernetes node of a Pod; for a process host its process space
   * (`proc:<boot id>:<pid namespace>`, platform/process-space.ts), without which its pid means nothing.
   */
  readonly node?: string;
}

export type HostStartResult =
  | {
      readonly outcome: "created" | "converged";
      /** For `converged`: where convergence came from (e.g. `lifecycle-cache`, `existing-pod`). */
      readonly convergenceSource?: string;
      readonly host: HostFacts;
      readonly endpoint: HostEndpoint;
      /** Layers the strategy itself proved (resource, host, endpoint, route); `command` is proven by the caller's probe. */
      readonly layersPassed: readonly ReadinessLayer[];
      /** Resources this attempt created (failure cleanup deletes only these). */
      readonly owned: readonly string[];
      /** Where the start's time went, ms from the call to the end of each step: for the log, never part of the proof. */
      readonly timingsMs?: Readonly<Record<string, number>>;
    }
  | {
      readonly outcome: "rejected";
      readonly reason: Reason;
      readonly layer?: ReadinessLayer;
      readonly owned: readonly string[];
    };

export type KillResult = (
  | {
      readonly outcome: "killed";
      readonly proof:
        | { kind: "process-exit"; pid: number; exitCode: number | null; signal: string | null }
        | { kind: "pod-uid-gone"; podUid: string; podName: string; namespace: string; observedBy: string };
    }
  | { readonly outcome: "timeout"; readonly detail: string }
  /**
   * This strategy cannot see the host (a process host of another machine or PID namespace, or of an
   * unknown one): nothing was signalled and nothing is proven. Retrying here does not help; the
   * party that can see the host has to kill it.
   */
  | { readonly outcome: "out-of-reach"; readonly detail: string }
) & {
  /**
   * Where the kill's time went, ms from the call to the end of each of its steps (e.g. the Pod read,
   * its delete, the UID seen gone): for the fencer's log line, never part of the proof.
   */
  readonly timingsMs?: Readonly<Record<string, number>>;
};

/** A host fact observed by the strategy: the fastest failure signal drover has. */
export type HostObservation =
  | {
      readonly kind: "exited";
      readonly runtimeInstanceId: string;
      readonly hostIncarnation: string;
      readonly exitCode: number | null;
      readonly signal: string | null;
    }
  | {
      readonly kind: "pod-deleted" | "container-terminated" | "pod-failed";
      readonly runtimeInstanceId: string;
      readonly hostIncarnation: string;
      readonly detail: string;
      /**
       * The Pod's exit code once every container of it terminated, as its kubelet last reported
       * (pod-decisions.ts `podExitCode`); absent when it did not (still running, or gone unreported).
       */
      readonly exitCode?: number;
    };

export interface HostStrategy {
  readonly provider: HostProvider;
  /**
   * Starts (or converges on) the host for the spec. Serialized per RuntimeInstanceId by the caller's lifecycle gate.
   * `onHostCreated`, when given, is awaited as soon as a new host exists and its incarnation is known,
   * before readiness is awaited, so the caller can record the incarnation durably: a caller that dies
   * mid-start then leaves a host its successor can kill by exact incarnation instead of an unknown orphan.
   * If the hook rejects, the strategy removes what it created and rejects with the hook's error.
   */
  start(
    spec: HostSpec,
    signal?: AbortSignal,
    onHostCreated?: (host: HostFacts) => Promise<void>,
  ): Promise<HostStartResult>;
  /**
   * Kills the exact incarnation and returns only when it can no longer run (or the deadline passed).
   * `deadlineMs` is a budget in milliseconds from the call (like DroverConfig.fenceDeadlineMs), not
   * an epoch time. A host that is not this strategy's kind (e.g. `pod:` for the process strategy)
   * is refused with `host-spec-invalid`. `hints.exitEvidence`: health's evidence that the runtime
   * is dead already (a lost connection); the Kubernetes strategy then ends the Pod with its grace-0
   * delete at once instead of waiting for the kubelet's report (pod-kill.ts).
   */
  kill(
    runtimeInstanceId: string,
    host: HostFacts,
    deadlineMs: number,
    hints?: { readonly exitEvidence?: string },
  ): Promise<KillResult>;
  /** Host facts as they happen; the returned function stops observing. */
  observe(onFact: (fact: HostObservation) => void): () => void;
  /** Releases strategy resources (watches, child handles) without killing hosts. */
  close(): Promise<void>;
}

/**
 * A strategy that keeps warm pool members (hosts.md "Warm pool"; process and Kubernetes hosts): a
 * member is a runtime started with no identity, tenant, command token or NATS credential, only its
 * member token, listening for exactly one binding.
 */
export interface WarmPoolHost {
  /**
   * Starts pool member `memberId` (no identity, only `poolToken` and a bind listener); proves resource,
   * host and endpoint (the bind listener). `onHostCreated` as for {@link HostStrategy.start}.
   */
  startPooled(
    memberId: string,
    poolToken: string,
    onHostCreated?: (host: HostFacts) => Promise<void>,
  ): Promise<HostStartResult>;
  /** Whether `memberId` is a live, unbound pool member this strategy started or adopted (only those can be bound here). */
  canBind(memberId: string): boolean;
  /**
   * Takes on member `memberId` that another provisioner of the control plane started (`host`: its
   * exact host as recorded), if this strategy can prove that host live, ready and unbound; resolves
   * whether it can be bound here now. Kubernetes only: any replica can reach a member's Pod, while
   * a process member can be bound only by its spawner (its successor stops it: orphan-members.ts).
   */
  adopt?(memberId: string, host: HostFacts): Promise<boolean>;
  /**
   * Binds pool member `memberId` to `spec` (identity, sizing, command token, NATS credential, tenant
   * code) over its bind endpoint, authenticated by `poolToken`; resolves once the bound runtime
   * serves commands. From then on the host is `spec.runtimeInstanceId`'s (kill and exit observations
   * use that id); a member is bound at most once, whatever the outcome.
   */
  bind(memberId: string, poolToken: string, spec: HostSpec): Promise<HostStartResult>;
  /**
   * Pauses (true) or continues (false) the members still booting, so the runtime starts in flight get
   * the CPU (process hosts: SIGSTOP / SIGCONT of their groups); returns how many were signalled.
   * Optional: a strategy without it boots its members regardless.
   */
  holdBoots?(hold: boolean): number;
}
