import { mkdir, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { startInformer } from "../lib/informer.ts";
import { loadKubeconfig } from "../control-plane/kubeconfig.ts";
import { makeLogger } from "../lib/log.ts";
import { stopAdoptionPolling } from "./container-process.ts";
import { IpPool } from "../lib/ip-pool.ts";
import { registerNode, setNodeReady } from "./node-registration.ts";
import { startPodBinder } from "./pod-binder.ts";
import { PodWorker } from "./pod-worker.ts";
import { readAllRecords, reapRecords, type ContainerRecord } from "./state-store.ts";

// The process kubelet of drover's local cluster (test and developer infrastructure): Pods bound to
// this node run as local processes on their own loopback IPs. Usage:
//   node --import tsx k8s/local-cluster/kubelet/main.ts --kubeconfig F --node-name N --state-dir D --pod-cidr 127.0.X.0/24 [--bind-unscheduled] [--ready-file F]
// SIGTERM/SIGINT stop the kubelet but leave container processes running: the next kubelet with the
// same --state-dir adopts them (or kills them if their Pod is gone).
const { values: args } = parseArgs({
  options: {
    kubeconfig: { type: "string" },
    "node-name": { type: "string" },
    "state-dir": { type: "string" },
    "pod-cidr": { type: "string" },
    "host-ip": { type: "string", default: "127.0.0.1" },
    "ready-file": { type: "string" },
    "bind-unscheduled": { type: "boolean", default: false },
  },
});
const need = (k: "kubeconfig" | "node-name" | "state-dir" | "pod-cidr"): string => {
  const v = args[k];
  if (!v) {
    process.stderr.write(`kubelet: --${k} is required\n`);
    process.exit(2);
  }
  return v;
};
const nodeName = need("node-name");
const stateDir = need("state-dir");
const podCIDR = need("pod-cidr");
const hostIP = args["host-ip"] ?? "127.0.0.1";
const log = makeLogger(`kubelet/${nodeName}`);
const kc = loadKubeconfig(need("kubeconfig"));
const core = kc.makeApiClient(CoreV1Api);
const ipPool = new IpPool(podCIDR);
ipPool.reserve(hostIP); // the node's own address (cluster.ts: the pod CIDR's .254) is never a Pod's
await mkdir(stateDir, { recursive: true });

await registerNode(core, nodeName, podCIDR, hostIP);

// Records left by an earlier run of this kubelet, grouped by Pod UID; each is handed to its Pod's
// worker (adopted) or, if the Pod no longer exists, its processes are stopped.
const leftovers = new Map<string, ContainerRecord[]>();
for (const r of await readAllRecords(stateDir)) {
  leftovers.set(r.podUid, [...(leftovers.get(r.podUid) ?? []), r]);
  ipPool.reserve(r.podIP);
}
const baseEnv: Record<string, string> = {};
for (const k of ["PATH", "HOME", "LANG", "TMPDIR"]) {
  const v = process.env[k];
  if (v !== undefined) baseEnv[k] = v;
}
const workers = new Map<string, PodWorker>();
const deps = {
  core,
  log,
  stateDir,
  nodeName,
  hostIP,
  ipPool,
  baseEnv,
  defaultCwd: process.cwd(),
  onFinished: (uid: string) => workers.delete(uid),
};

const pods = await startInformer<V1Pod>(kc, {
  path: "/api/v1/pods",
  fieldSelector: `spec.nodeName=${nodeName}`,
  list: () => core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` }),
  log,
  onChange: (kind, pod) => {
    const uid = pod.metadata?.uid ?? "";
    const worker = workers.get(uid);
    if (kind === "delete") {
      worker?.deleted();
      return;
    }
    if (worker) {
      worker.update(pod);
      return;
    }
    const records = leftovers.get(uid) ?? [];
    leftovers.delete(uid);
    workers.set(uid, new PodWorker(deps, pod, records));
  },
});
for (const [uid, records] of leftovers) {
  log.info("stopping processes of a pod that no longer exists", { uid, pids: records.map((r) => r.pid) });
  await reapRecords(stateDir, records, 10_000);
  for (const r of records) ipPool.release(r.podIP);
}
leftovers.clear();
const binder = args["bind-unscheduled"] ? await startPodBinder(kc, core, nodeName, log) : undefined;
log.info("kubelet ready", { podCIDR, stateDir, adopted: workers.size });
// The launcher waits for our pid in this file: Node registered, leftovers adopted or stopped.
if (args["ready-file"]) await writeFile(args["ready-file"], String(process.pid));

let stopping = false;
const shutdown = async (signal: string): Promise<void> => {
  if (stopping) return;
  stopping = true;
  log.info("kubelet stopping; container processes keep running for the next kubelet", { signal });
  await Promise.allSettled([pods.stop(), binder?.stop()]);
  for (const w of workers.values()) w.detach();
  stopAdoptionPolling();
  await setNodeReady(core, nodeName, hostIP, false).catch(() => undefined);
  process.exit(0);
};
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
