import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import type { z } from "zod";
import type { KubernetesHostConfig } from "../contracts/index.ts";
import { startCluster, stopCluster } from "../k8s/local-cluster/cluster.ts";
import { loadKubeconfig } from "../k8s/local-cluster/control-plane/kubeconfig.ts";

const ROOT = resolve(import.meta.dirname, "..");

/**
 * A private local cluster (real kube-apiserver, process kubelet, local gateway) for a proof run
 * with Kubernetes hosts, and the `kubernetes` configuration that makes the control plane host
 * runtimes on it: a fresh namespace, runtime Pods running services/runtime/main.ts from this
 * repository, `pod-ip`, `node-port` (the cluster's node-port proxy) or `gateway` exposure (a shared
 * Gateway of class `drover-local`).
 * `stop()` stops every daemon and Pod process of the cluster and removes its directory.
 */
export async function startProofCluster(
  exposure: "pod-ip" | "gateway" | "node-port",
): Promise<{ kubernetes: z.input<typeof KubernetesHostConfig>; stop: () => Promise<void> }> {
  const runDir = await mkdtemp(join(tmpdir(), "drover-proof-k8s-"));
  const stop = async (): Promise<void> => {
    await stopCluster(runDir);
    await rm(runDir, { recursive: true, force: true });
  };
  try {
    const info = await startCluster(runDir);
    const namespace = `drover-proof-${randomBytes(3).toString("hex")}`;
    await loadKubeconfig(info.kubeconfig)
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: namespace } } });
    const kubernetes: z.input<typeof KubernetesHostConfig> = {
      kubeconfig: info.kubeconfig,
      namespace,
      exposure,
      runtimeCommand: [process.execPath, "--import", "tsx", "services/runtime/main.ts"],
      workingDir: ROOT,
      ...(exposure === "gateway" ? { gateway: { name: "drover-shared", namespace, className: "drover-local" } } : {}),
    };
    return { kubernetes, stop };
  } catch (e) {
    await stop().catch(() => undefined);
    throw e;
  }
}
