import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { freePortOnLoopback } from "./lib/free-port.ts";
import { daemonAlive, startDaemon, stopDaemon, waitUntilReady, type DaemonRecord } from "./lib/daemon.ts";
import { startControlPlane, stopControlPlane } from "./control-plane/control-plane.ts";
import { applyGatewayApi } from "./control-plane/gateway-crds.ts";
import { loadKubeconfig, writeKubeconfig } from "./control-plane/kubeconfig.ts";
import { claimNetworkSlot, networkSlot, releaseNetworkSlot } from "./control-plane/network.ts";
import { startComponents, stopComponents } from "./node/components.ts";
import { realNodesIn, startRealNode, stopRealNode } from "./node/real-node.ts";
import { waitForNodeReady } from "./node/node-ready.ts";

/** Where a running local cluster is and how to reach it (also written to `<runDir>/cluster.json`). */
export interface ClusterInfo {
  readonly runDir: string;
  readonly kubeconfig: string;
  readonly server: string;
  readonly token: string;
  readonly caFile: string;
  readonly networkSlot: number;
  readonly nodeName: string;
  readonly gatewayCidr: string;
}

export const LOCAL_CLUSTER_DIR = import.meta.dirname;
export const REPO_ROOT = resolve(import.meta.dirname, "../..");
export const BIN_DIR = process.env.DROVER_K8S_BIN_DIR ?? join(LOCAL_CLUSTER_DIR, "bin");
export const MAIN_NODE = "drover-local-node";

/**
 * Starts a whole local cluster under `runDir`: etcd and kube-apiserver (built by build.sh) on free
 * loopback ports, a kubeconfig at `<runDir>/kubeconfig`, the Gateway API CRDs and GatewayClass,
 * kube-scheduler and kube-controller-manager, a real node `drover-local-node` (the upstream kubelet
 * with its own containerd, runc and CNI bridge; `images` are imported into it) and the local gateway
 * (which is also the node-port proxy). Every daemon is detached and recorded, so {@link stopCluster}
 * can stop exactly them from any process. On failure, stops what started and rethrows.
 */
export async function startCluster(runDir: string, opts: { images?: readonly string[] } = {}): Promise<ClusterInfo> {
  const bins = ["kubelet", "kube-scheduler", "kube-controller-manager", "pause"];
  for (const bin of ["kube-apiserver", "etcd-local", "gateway-api.dir", ...bins]) {
    if (!existsSync(join(BIN_DIR, bin)))
      throw new Error(`${join(BIN_DIR, bin)} is missing: run \`make k8s-build\` (k8s/local-cluster/build.sh) first`);
  }
  await mkdir(runDir, { recursive: true });
  const slot = claimNetworkSlot(runDir);
  await writeFile(join(runDir, "slot"), String(slot.slot));
  try {
    const [etcdClient, etcdPeer, apiserver] = [
      await freePortOnLoopback(),
      await freePortOnLoopback(),
      await freePortOnLoopback(),
    ];
    const cp = await startControlPlane({ binDir: BIN_DIR, dir: runDir, ports: { etcdClient, etcdPeer, apiserver } });
    const kubeconfig = join(runDir, "kubeconfig");
    await writeKubeconfig(kubeconfig, cp.server, cp.pki.caCert, cp.pki.adminToken);
    const info: ClusterInfo = {
      runDir,
      kubeconfig,
      server: cp.server,
      token: cp.pki.adminToken,
      caFile: cp.pki.caCert,
      networkSlot: slot.slot,
      nodeName: MAIN_NODE,
      gatewayCidr: slot.gatewayCidr,
    };
    // The node needs no CRDs, so it starts while they are being established (about 3 s).
    const crdDir = (await readFile(join(BIN_DIR, "gateway-api.dir"), "utf8")).trim();
    const startNode = async (): Promise<void> => {
      await startComponents({
        binDir: BIN_DIR,
        runDir,
        server: cp.server,
        caFile: cp.pki.caCert,
        caKey: join(runDir, "ca.key"),
        saPrivateKey: cp.pki.saPrivateKey,
        schedulerToken: cp.pki.schedulerToken,
        controllerManagerToken: cp.pki.controllerManagerToken,
      });
      await startRealNodeOf(info, MAIN_NODE, 0, opts.images);
    };
    const [crds, kubelet] = await Promise.allSettled([
      applyGatewayApi(loadKubeconfig(kubeconfig), crdDir),
      startNode(),
    ]);
    if (crds.status === "rejected") throw crds.reason;
    if (kubelet.status === "rejected") throw kubelet.reason;
    await startGateway(info);
    await writeFile(join(runDir, "cluster.json"), JSON.stringify(info, null, 2));
    return info;
  } catch (err) {
    await stopCluster(runDir).catch(() => undefined);
    throw err;
  }
}

/** Reads `<runDir>/cluster.json`; undefined when no cluster was (completely) started there. */
export async function readClusterInfo(runDir: string): Promise<ClusterInfo | undefined> {
  try {
    return JSON.parse(await readFile(join(runDir, "cluster.json"), "utf8")) as ClusterInfo;
  } catch {
    return undefined;
  }
}

const tsDaemon = (script: string, args: string[]): [string, string[]] => [
  process.execPath,
  ["--import", "tsx", join(LOCAL_CLUSTER_DIR, script), ...args],
];

async function waitForReadyFile(rec: DaemonRecord, file: string, timeoutMs: number): Promise<void> {
  await waitUntilReady(
    rec,
    async () => (await readFile(file, "utf8").catch(() => "")).trim() === String(rec.pid),
    timeoutMs,
  );
}

/**
 * Starts a real node (node index 0–2: its own containerd, bridge and cgroup root) in a running
 * containerd-mode cluster and resolves once its Node is Ready without the not-ready taint.
 */
export async function startRealNodeOf(
  info: ClusterInfo,
  nodeName: string,
  nodeIndex: 0 | 1 | 2,
  images?: readonly string[],
): Promise<void> {
  await startRealNode({
    runDir: info.runDir,
    binDir: BIN_DIR,
    server: info.server,
    caFile: info.caFile,
    slot: info.networkSlot,
    nodeName,
    nodeIndex,
    images,
  });
  await waitForNodeReady(loadKubeconfig(info.kubeconfig), nodeName, 90_000);
}

async function startGateway(info: ClusterInfo): Promise<DaemonRecord> {
  const readyFile = join(info.runDir, "gateway.ready");
  const [cmd, args] = tsDaemon("gateway/main.ts", [
    "--kubeconfig",
    info.kubeconfig,
    "--address-cidr",
    info.gatewayCidr,
    "--ready-file",
    readyFile,
  ]);
  const rec = await startDaemon("gateway", cmd, args, {
    logFile: join(info.runDir, "gateway.log"),
    recordFile: join(info.runDir, "gateway.json"),
    cwd: REPO_ROOT,
  });
  await waitForReadyFile(rec, readyFile, 60_000);
  return rec;
}

/** True when the recorded daemon of that name (e.g. `gateway`) is alive. */
export async function daemonRunning(runDir: string, name: string): Promise<boolean> {
  try {
    return daemonAlive(JSON.parse(await readFile(join(runDir, `${name}.json`), "utf8")) as DaemonRecord);
  } catch {
    return false;
  }
}

/**
 * Stops everything a cluster in `runDir` runs, in order: gateway, real nodes (kubelet, containers,
 * containerd and everything they left on the host), scheduler, controller manager, kube-apiserver, etcd; then
 * releases the network slot. Only recorded processes whose pid and start time still match are
 * signalled. Safe to call twice and on a half-started cluster.
 */
export async function stopCluster(runDir: string): Promise<void> {
  await stopDaemon(join(runDir, "gateway.json"));
  for (const node of realNodesIn(runDir)) await stopRealNode(runDir, node);
  await stopComponents(runDir);
  await stopControlPlane(runDir);
  const slot = Number(await readFile(join(runDir, "slot"), "utf8").catch(() => "0"));
  if (slot > 0) releaseNetworkSlot(networkSlot(slot), runDir);
}
