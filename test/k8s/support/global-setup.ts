import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startCluster, stopCluster } from "../../../k8s/local-cluster/cluster.ts";

declare module "vitest" {
  export interface ProvidedContext {
    k8sKubeconfig: string;
    k8sRunDir: string;
    k8sNetworkSlot: number;
  }
}

/**
 * One local cluster per k8s-tier run (real kube-apiserver + etcd on free loopback ports, the
 * process kubelet, the local gateway) in a private temp dir; stopped — every daemon and every Pod
 * process — when the run ends. Set DROVER_K8S_KEEP_LOGS=1 to keep the dir (logs) after the run.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const runDir = await mkdtemp(join(tmpdir(), "drover-k8s-"));
  const t0 = Date.now();
  let info;
  try {
    info = await startCluster(runDir);
  } catch (err) {
    await rm(runDir, { recursive: true, force: true });
    throw err;
  }
  process.stderr.write(
    `[drover] local cluster for the k8s tier up in ${Date.now() - t0} ms (${info.server}, logs in ${runDir})\n`,
  );
  project.provide("k8sKubeconfig", info.kubeconfig);
  project.provide("k8sRunDir", runDir);
  project.provide("k8sNetworkSlot", info.networkSlot);
  return async () => {
    await stopCluster(runDir);
    if (process.env.DROVER_K8S_KEEP_LOGS !== "1") await rm(runDir, { recursive: true, force: true });
  };
}
