import { arch, cpus, hostname, release, totalmem } from "node:os";
import { PatchStrategy, setHeaderOptions, type CoreV1Api } from "@kubernetes/client-node";
import { isApiCode } from "../lib/api-errors.ts";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

function nodeStatus(hostIP: string, ready: boolean, now: string): Record<string, unknown> {
  const cond = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  });
  const capacity = {
    cpu: String(cpus().length),
    memory: `${Math.floor(totalmem() / 1024)}Ki`,
    pods: "250",
    "ephemeral-storage": "10Gi",
  };
  return {
    conditions: [
      cond(
        "Ready",
        ready ? "True" : "False",
        ready ? "KubeletReady" : "KubeletStopped",
        ready
          ? "drover local kubelet is posting ready status (pods run as local processes)"
          : "drover local kubelet stopped",
      ),
      cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "not measured by the local kubelet"),
      cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "not measured by the local kubelet"),
      cond("PIDPressure", "False", "KubeletHasSufficientPID", "not measured by the local kubelet"),
    ],
    addresses: [
      { type: "InternalIP", address: hostIP },
      { type: "Hostname", address: hostname() },
    ],
    capacity,
    allocatable: capacity,
    daemonEndpoints: { kubeletEndpoint: { Port: 0 } },
    nodeInfo: {
      machineID: "",
      systemUUID: "",
      bootID: "",
      kernelVersion: release(),
      osImage: "local processes (drover local kubelet)",
      containerRuntimeVersion: "local://0",
      kubeletVersion: "drover-local",
      kubeProxyVersion: "",
      operatingSystem: "linux",
      architecture: arch(),
    },
  };
}

/**
 * Creates the Node (or takes over an existing one of the same name: a restarted kubelet) with its
 * pod CIDR and marks it Ready through the status subresource. Throws on API errors other than
 * AlreadyExists.
 */
export async function registerNode(core: CoreV1Api, nodeName: string, podCIDR: string, hostIP: string): Promise<void> {
  const labels = {
    "kubernetes.io/hostname": nodeName,
    "kubernetes.io/os": "linux",
    "kubernetes.io/arch": arch(),
    "drover.dev/local-kubelet": "true",
  };
  try {
    await core.createNode({ body: { metadata: { name: nodeName, labels }, spec: { podCIDR, podCIDRs: [podCIDR] } } });
  } catch (err) {
    if (!isApiCode(err, 409)) throw err;
  }
  await setNodeReady(core, nodeName, hostIP, true);
}

/** Writes the Node's Ready condition (false when the kubelet stops, so nobody mistakes it for alive). */
export async function setNodeReady(core: CoreV1Api, nodeName: string, hostIP: string, ready: boolean): Promise<void> {
  await core.patchNodeStatus(
    { name: nodeName, body: { status: nodeStatus(hostIP, ready, new Date().toISOString()) } },
    mergePatch,
  );
}
