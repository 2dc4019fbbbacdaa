import { inject } from "vitest";
import { IMAGE_RUNTIME_COMMAND, LOCAL_NODE_CPU_REQUEST } from "../../../proof/kubernetes-hosts.ts";
import { DEFAULT_RUNTIME_RESOURCES, type RuntimePodOptions } from "../../../platform/hosts/kubernetes/spec.ts";
import { startNats, type RunningServer } from "../../../platform/local-servers.ts";

/**
 * What makes KubernetesHostStrategy run the real runtime on the k8s tier's real node: the runtime
 * image global-setup.ts imported, its entrypoint, and a CPU request small enough for dozens of
 * runtime Pods on the node's 2 CPUs.
 */
export function runtimePodOptions(): Pick<RuntimePodOptions, "image" | "command" | "resources"> {
  return {
    image: inject("k8sImage"),
    command: IMAGE_RUNTIME_COMMAND,
    resources: { ...DEFAULT_RUNTIME_RESOURCES, cpuRequest: LOCAL_NODE_CPU_REQUEST },
  };
}

/** A private nats-server on the node's address, the one the Pods on the bridge can reach. */
export const startPodReachableNats = (): Promise<RunningServer> => startNats({ host: inject("k8sNodeIp") });

/** The same for a control plane's `kubernetes` host configuration (KubernetesHostConfig). */
export function runtimeHostConfig(): {
  runtimeImage: string;
  runtimeCommand: string[];
  runtimeResources: { cpuRequest: string };
} {
  return {
    runtimeImage: inject("k8sImage"),
    runtimeCommand: [...IMAGE_RUNTIME_COMMAND],
    runtimeResources: { cpuRequest: LOCAL_NODE_CPU_REQUEST },
  };
}
