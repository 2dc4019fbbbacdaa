import type { KubeConfig } from "@kubernetes/client-node";
import type { ReadinessLayer } from "../../../contracts/index.ts";
import type { Clock } from "../../clock.ts";
import type { HostEndpoint, HostFacts } from "../types.ts";
import type { PodForward } from "./pod-forward.ts";
import type { SharedGateway } from "./routes.ts";
import type { RuntimePodOptions } from "./spec.ts";

export interface KubernetesStrategyOptions extends RuntimePodOptions {
  readonly kubeconfig: KubeConfig;
  /**
   * `pod-ip` (control plane inside the cluster, or the local cluster), `gateway` (one shared Gateway,
   * a route per runtime), `node-port` (a per-runtime `type: NodePort` Service, dialled at the node address)
   * or `port-forward` (a local listener per runtime in this process, tunnelled through the API
   * server's `pods/portforward`: the control plane outside the cluster, with only API access).
   */
  readonly exposure?: "pod-ip" | "gateway" | "node-port" | "port-forward";
  /** For `node-port`: the address dialled with the node port (default: the runtime Pod's `status.hostIP`, its Node's InternalIP). */
  readonly nodeAddress?: string;
  /** For `port-forward`: the address the local listeners bind (default 127.0.0.1: only this machine reaches them). */
  readonly forwardAddress?: string;
  /** Required for `gateway` exposure. */
  readonly gateway?: SharedGateway;
  /** Budget from Pod creation to Ready (default 60 s: a cold image pull or tsx start on a busy machine is seconds). */
  readonly readinessTimeoutMs?: number;
  /** Budget for the route layer: Gateway route, or the node-port probe (default 30 s). */
  readonly routeTimeoutMs?: number;
  /**
   * Grace period of the kill's first delete (default 1 s: a fenced runtime must stop, not drain; and
   * while a Pod is Terminating its UID still exists, so recovery waits for it). Escalated to 0 at
   * 70 % of the kill budget — a forced delete removes the UID before the kubelet has stopped the
   * container, so the proof then rests on the kubelet acting on the deletion.
   */
  readonly killGraceSeconds?: number;
  /** The clock that readiness and route deadlines are measured on (default the system clock). */
  readonly clock?: Clock;
  /** CPU limit of a warm pool member's Pod (pool-spec.ts), the most workers a binding may ask for (default 2). */
  readonly poolCpuLimit?: number;
}

/** What a start proved, kept for the converging start and the kill. */
export interface Running {
  readonly identity: string;
  readonly host: HostFacts;
  readonly endpoint: HostEndpoint;
  readonly layers: readonly ReadinessLayer[];
  readonly nodePortService?: { readonly name: string; readonly uid: string; readonly nodePort: number };
  /** `port-forward` exposure: this runtime's listener, closed by the kill. */
  readonly forward?: PodForward;
}
