import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import type { z } from "zod";
import type { KubernetesHostConfig } from "../contracts/index.ts";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { startCluster, stopCluster } from "../k8s/local-cluster/cluster.ts";
import { loadKubeconfig } from "../k8s/local-cluster/control-plane/kubeconfig.ts";
import { nodeNetwork } from "../k8s/local-cluster/node/host-net.ts";

const ROOT = resolve(import.meta.dirname, "..");
const run = promisify(execFile);

/** The runtime image's argv (k8s/image/build.sh): node and the bundled runtime, no node_modules. */
export const IMAGE_RUNTIME_COMMAND = ["/usr/local/bin/node", "/app/runtime-loader.cjs", "/app/runtime.cjs"];

/** Each runtime Pod's CPU request on the local real node (2 CPUs fit 200 of them). */
export const LOCAL_NODE_CPU_REQUEST = "10m";

/** Builds (cached) the runtime image; its archive for the node to import and its reference for the Pods. */
export async function buildRuntimeImage(): Promise<{ archive: string; ref: string }> {
  const { stdout } = await run(join(ROOT, "k8s/image/build.sh"), ["runtime"], { maxBuffer: 1 << 20 });
  return { archive: join(ROOT, ".run/images/runtime.tar"), ref: stdout.trim().split("\n").pop() ?? "" };
}

/**
 * A private local cluster (real kube-apiserver, scheduler, controller manager, local gateway and a
 * real node: the upstream kubelet with containerd and runc) for a proof run with Kubernetes hosts,
 * and the `kubernetes` configuration that makes the control plane host runtimes on it: a fresh
 * namespace, runtime Pods from the runtime image `make image` builds, `pod-ip`, `node-port` (the
 * cluster's node-port proxy), `gateway` (a shared Gateway of class `drover-local`) or `port-forward`
 * exposure (the provisioner's listeners, tunnelled through the API server to the real kubelet).
 * `natsHost` is where NATS must listen for the Pods to reach it (the node's address).
 * `stop()` stops every daemon and Pod of the cluster and removes its directory (kept, with the node's
 * kubelet, containerd and container logs, when DROVER_KEEP_LOGS is set).
 */
export async function startProofCluster(exposure: "pod-ip" | "gateway" | "node-port" | "port-forward"): Promise<{
  kubernetes: z.input<typeof KubernetesHostConfig>;
  natsHost: string;
  stop: () => Promise<void>;
}> {
  const runDir = await mkdtemp(join(tmpdir(), "drover-proof-k8s-"));
  const stop = async (): Promise<void> => {
    await stopCluster(runDir);
    if (process.env.DROVER_KEEP_LOGS) process.stderr.write(`local cluster logs kept in ${runDir}\n`);
    else await rm(runDir, { recursive: true, force: true });
  };
  try {
    const image = await buildRuntimeImage();
    const info = await startCluster(runDir, { images: [image.archive] });
    const namespace = `drover-proof-${randomBytes(3).toString("hex")}`;
    await loadKubeconfig(info.kubeconfig)
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: namespace } } });
    const kubernetes: z.input<typeof KubernetesHostConfig> = {
      kubeconfig: info.kubeconfig,
      namespace,
      exposure,
      runtimeImage: image.ref,
      runtimeCommand: IMAGE_RUNTIME_COMMAND,
      ...(exposure === "gateway" ? { gateway: { name: "drover-shared", namespace, className: "drover-local" } } : {}),
      // The real scheduler counts requests against the node's 2 CPUs: at the default 100m only 20
      // runtime Pods fit and P=15 (up to ~45 runtimes at once) stalls Pending. An idle runtime uses a few millicores.
      runtimeResources: { cpuRequest: LOCAL_NODE_CPU_REQUEST },
    };
    return { kubernetes, natsHost: nodeNetwork(info.networkSlot, 0).nodeIp, stop };
  } catch (e) {
    await stop().catch(() => undefined);
    throw e;
  }
}
