import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { componentNice, startDaemon, waitUntilReady, type DaemonRecord } from "../lib/daemon.ts";
import { getOk } from "../control-plane/probes.ts";
import type { IssuedCert } from "./certs.ts";

/** What one upstream kubelet needs; every path is under the node dir except the binary and the CA. */
export interface KubeletOptions {
  readonly bin: string;
  readonly nodeDir: string;
  readonly nodeName: string;
  readonly nodeIp: string;
  readonly kubeconfig: string;
  readonly caFile: string;
  readonly serving: IssuedCert;
  readonly containerdSocket: string;
  readonly cgroupRoot: string;
}

// cgroup v1 only on these machines (failCgroupV1: false); image GC never deletes imported images
// (nothing could pull them back); eviction only when nearly out, so a busy shared disk does not taint the node.
function config(o: KubeletOptions): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://${o.containerdSocket}
cgroupDriver: cgroupfs
cgroupRoot: ${o.cgroupRoot}
failSwapOn: false
failCgroupV1: false
address: ${o.nodeIp}
port: 10250
readOnlyPort: 0
healthzBindAddress: ${o.nodeIp}
healthzPort: 10248
tlsCertFile: ${o.serving.cert}
tlsPrivateKeyFile: ${o.serving.key}
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ${o.caFile}}
authorization: {mode: Webhook}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
podLogsDir: ${join(o.nodeDir, "pod-logs")}
staticPodPath: ""
syncFrequency: 10s
fileCheckFrequency: 20s
serializeImagePulls: false
protectKernelDefaults: false
makeIPTablesUtilChains: false
`;
}

/**
 * Starts the upstream kubelet for one node and resolves once its healthz answers (the Node object is
 * registered by then or shortly after; it turns Ready once the CNI config is loaded).
 */
export async function startRealKubelet(o: KubeletOptions): Promise<DaemonRecord> {
  const root = join(o.nodeDir, "kubelet");
  await mkdir(root, { recursive: true });
  const file = join(o.nodeDir, "kubelet-config.yaml");
  await writeFile(file, config(o));
  const rec = await startDaemon(
    `kubelet-${o.nodeName}`,
    o.bin,
    [
      `--config=${file}`,
      `--kubeconfig=${o.kubeconfig}`,
      `--root-dir=${root}`,
      `--hostname-override=${o.nodeName}`,
      `--node-ip=${o.nodeIp}`,
      // DROVER_KUBELET_V=4 logs the pod workers' and status manager's decisions (diagnosis only: ~10× the log).
      `--v=${process.env.DROVER_KUBELET_V ?? "1"}`,
    ],
    { logFile: join(o.nodeDir, "kubelet.log"), recordFile: join(o.nodeDir, "kubelet.json"), nice: componentNice() },
  );
  await waitUntilReady(rec, () => getOk(`http://${o.nodeIp}:10248/healthz`), 90_000);
  return rec;
}
