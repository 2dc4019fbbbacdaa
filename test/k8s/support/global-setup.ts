import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startCluster, stopCluster } from "../../../k8s/local-cluster/cluster.ts";
import { realNodeDir, type RealNodeRecord } from "../../../k8s/local-cluster/node/real-node.ts";
import { bundlePodApp, runtimeImage } from "./container-app.ts";

declare module "vitest" {
  export interface ProvidedContext {
    k8sKubeconfig: string;
    k8sRunDir: string;
    k8sNetworkSlot: number;
    /** The runtime image's reference (imported into the node): what every Pod of the tier runs. */
    k8sImage: string;
    /** The bundled pod-app fixture (a world-readable host dir), mounted read-only by fixture Pods. */
    k8sFixtureDir: string;
    /** The node's address: its InternalIP, where NATS must listen for a Pod to reach it. */
    k8sNodeIp: string;
    /** The node's Pod CIDR (a /24 on its bridge). */
    k8sPodCidr: string;
    /** The node's cgroup root (container host pids are in its pids hierarchy). */
    k8sCgroupRoot: string;
  }
}

/**
 * One local cluster per k8s-tier run, in a private temp dir: real kube-apiserver + etcd on free
 * loopback ports, kube-scheduler and kube-controller-manager, a real node (the upstream kubelet with
 * containerd and runc, CNI bridge) with the runtime image `make image` builds imported, and the local
 * gateway. Stopped — every daemon, container, mount, link and cgroup — when the run ends. Set
 * DROVER_K8S_KEEP_LOGS=1 to keep the dir (logs) after the run.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const runDir = await mkdtemp(join(tmpdir(), "drover-k8s-"));
  const t0 = Date.now();
  let info;
  let image;
  try {
    image = await runtimeImage();
    info = await startCluster(runDir, { images: [image.archive] });
  } catch (err) {
    await stopCluster(runDir).catch(() => undefined);
    await rm(runDir, { recursive: true, force: true });
    throw err;
  }
  const node = JSON.parse(
    readFileSync(join(realNodeDir(runDir, info.nodeName), "node.json"), "utf8"),
  ) as RealNodeRecord;
  process.stderr.write(
    `[drover] local cluster (real node) for the k8s tier up in ${Date.now() - t0} ms (${info.server}, logs in ${runDir})\n`,
  );
  project.provide("k8sKubeconfig", info.kubeconfig);
  project.provide("k8sRunDir", runDir);
  project.provide("k8sNetworkSlot", info.networkSlot);
  project.provide("k8sImage", image.ref);
  project.provide("k8sFixtureDir", bundlePodApp(join(runDir, "fixture")));
  project.provide("k8sNodeIp", node.net.nodeIp);
  project.provide("k8sPodCidr", node.net.podCidr);
  project.provide("k8sCgroupRoot", node.cgroupRoot);
  return async () => {
    await stopCluster(runDir);
    if (process.env.DROVER_K8S_KEEP_LOGS !== "1") await rm(runDir, { recursive: true, force: true });
  };
}
