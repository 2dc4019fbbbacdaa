import type { z } from "zod";
import { resolve } from "node:path";
import type { DroverConfig, KubernetesHostConfig, Transport } from "../contracts/index.ts";
import { CHAIN_KINDS, CONTROL_FLOW_KINDS } from "./custom-worker.ts";
import { CF_MAX_CONCURRENCY, CF_RESOLVER } from "./control-flow-workload.ts";
import type { ProofWorkload } from "./workload.ts";

/** The proof tenants' worker module for `--workload custom` (an absolute path: the provisioner bundles it). */
export const PROOF_WORKER_MODULE = resolve(import.meta.dirname, "custom-worker.ts");

/** The proof's knobs (proof-and-bench.md "The crash-recovery proof"). */
export interface ProofOptions {
  readonly parallel: number;
  readonly transport: Transport;
  readonly host: "process" | "kubernetes";
  readonly steps: number;
  readonly stepMs: number;
  readonly seed: number;
  readonly killAfterSteps: number;
  /** SIGKILL (a crash) or SIGSTOP (a zombie: alive but silent; health must notice and the fence must kill it). */
  readonly signal: "SIGKILL" | "SIGSTOP";
  /** Kubernetes hosts only: how the control plane reaches runtime Pods. */
  readonly exposure?: "pod-ip" | "gateway" | "node-port" | "port-forward";
  /** The chain's step code: built-in kinds, or the tenants' own worker (proof/custom-worker.ts). */
  readonly workload: ProofWorkload;
  /** Runtime hosts the provisioner starts at once (`maxConcurrentHostStartups`; default 4). */
  readonly hostStartups?: number;
  /**
   * Runtime hosts the provisioner keeps warm for the proof's host provider (`warmPool`; default 0,
   * every runtime cold-starts): scale-outs, the recovery replacements included, claim a ready member.
   * Kubernetes hosts need pod-ip exposure for it.
   */
  readonly warmPool?: number;
  /** Processes per control-plane service (default 1; issue 16's replicated proof runs 2). */
  readonly replicas?: number;
  /**
   * With replicas: once every run is submitted, SIGKILL a random replica of the next service in
   * turn every this many ms and restart it (proof/chaos.ts); 0 or absent: no chaos.
   */
  readonly chaosEveryMs?: number;
  /** Nodes of the private NATS cluster the proof starts (`--nats-cluster 3`; streams R3); unset: one server. */
  readonly natsCluster?: number;
  /** `--kill-nats-leader`: SIGKILL the event stream's leader node mid-proof, restart it later (needs natsCluster). */
  readonly killNatsLeader?: boolean;
}

export const DEFAULT_PROOF: ProofOptions = {
  parallel: 1,
  transport: "http",
  host: "process",
  steps: 50,
  stepMs: 20,
  seed: 1,
  killAfterSteps: 25,
  signal: "SIGKILL",
  workload: "builtin",
};

/** The heartbeat bound of a proof on a NATS cluster: above a leader failover (elections took 5–10 s). */
export const CLUSTER_STALE_HEARTBEAT_MS = 20_000;

/** `--workload control-flow`'s defaults: `steps` is the map's item count, `killAfterSteps` the items completed at the kill. */
export const CONTROL_FLOW_PROOF = { steps: 6, killAfterSteps: 2 } as const;

/** The three tenants of scenario `i`: two impacted, one safe, each with a dedicated runtime. */
export function scenarioTenants(i: number): { impacted: [string, string]; safe: string } {
  return { impacted: [`p${i}-imp-a`, `p${i}-imp-b`], safe: `p${i}-safe` };
}

export const tokenOf = (tenantId: string): string => `proof-token-${tenantId}`.padEnd(24, "0");
/** A second token of each tenant, named `approver`: the only principal the control-flow workload's wait allows. */
export const approverTokenOf = (tenantId: string): string => `proof-approver-${tenantId}`.padEnd(24, "0");
export const OPERATOR_TOKEN = "proof-token-operator-000001";

/**
 * Every tenant dedicated, one runtime each (maxRuntimeInstances 1, so all three runs land on the
 * same runtime), sized 1 worker × 1 concurrent run + 2 queued: at kill time an impacted runtime holds
 * exactly 1 in-flight execution and 2 local-queued runs. `control-flow`: 3 workers, all for the
 * one run, so its map runs 3 items at once (the wait holds none).
 */
export function proofConfig(
  o: ProofOptions,
  kubernetes?: z.input<typeof KubernetesHostConfig>,
): z.input<typeof DroverConfig> {
  const cf = o.workload === "control-flow";
  const tenants = [];
  const tokens: Record<string, unknown> = { [OPERATOR_TOKEN]: { role: "operator", name: "proof" } };
  for (let i = 0; i < o.parallel; i++) {
    const t = scenarioTenants(i);
    for (const tenantId of [...t.impacted, t.safe]) {
      tenants.push({
        tenantId,
        isolationMode: "dedicated",
        maxRuntimeInstances: 1,
        workersPerInstance: cf ? CF_MAX_CONCURRENCY : 1,
        maxConcurrentRunsPerInstance: 1,
        localQueueCapacity: 2,
        maxWorkersPerRun: cf ? CF_MAX_CONCURRENCY : 1,
        maxConcurrentRuns: 10,
        transport: o.transport,
        hostProvider: o.host,
        ...(o.workload === "custom" ? { worker: { module: PROOF_WORKER_MODULE, kinds: [...CHAIN_KINDS] } } : {}),
        ...(cf ? { worker: { module: PROOF_WORKER_MODULE, kinds: [...CONTROL_FLOW_KINDS] } } : {}),
      });
      tokens[tokenOf(tenantId)] = { role: "tenant", tenantId };
      if (cf) tokens[approverTokenOf(tenantId)] = { role: "tenant", tenantId, name: CF_RESOLVER };
    }
  }
  // Crashes are detected by the observed process exit (tens of ms); the heartbeat bound only has to
  // catch zombies, and at P=50 on 2 cores (load > 12) a 750 ms bound suspected a live runtime once.
  return {
    controlPlaneId: "cp-proof",
    heartbeatIntervalMs: 500,
    // On a NATS cluster whose leader is killed, no heartbeat is stored while the streams elect new
    // leaders (5–10 s measured): a 3 s bound fenced a healthy safe runtime. The bound must exceed
    // the failover time (docs/decisions.md "Clustered JetStream").
    staleHeartbeatMs: o.natsCluster ? CLUSTER_STALE_HEARTBEAT_MS : 3000,
    dispatchTimeoutMs: 3000,
    fenceDeadlineMs: 10_000,
    maxConcurrentHostStartups: o.hostStartups ?? 4,
    ...(o.warmPool ? { warmPool: { [o.host]: o.warmPool } } : {}),
    scaleOutExpiryMs: 300_000,
    tenants,
    tokens,
    ...(kubernetes ? { kubernetes } : {}),
  } as z.input<typeof DroverConfig>;
}
