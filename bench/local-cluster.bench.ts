/**
 * The local Kubernetes cluster (k8s/local-cluster: real kube-apiserver + etcd, kube-scheduler,
 * kube-controller-manager, a real node — the upstream kubelet with containerd, runc and a CNI bridge
 * — and the local gateway), started privately the way the k8s test tier starts it (`startCluster` in
 * a temp dir, the runtime image `make image` builds imported), then stopped with every container.
 * Needs `make k8s-build` (and root, for the node).
 *
 *  - k8s_cluster_startup: startCluster() → API server ready, CRDs Established, Node Ready and
 *    untainted, gateway serving (one sample per run; the runtime image import included);
 *  - k8s_pod_create_ready: createNamespacedPod → Ready=True seen by a watch, cold (a new sandbox and
 *    container each; the image is already on the node), for the k8s tier's pod-app fixture (the runtime
 *    image's node, readiness probe every 1 s). A warm pool member (docs/kubernetes.md "Warm pools") is
 *    a Pod created and Ready before the scale-out that claims it: its figure is the scale-out's request →
 *    capacity, cold and warm side by side (k8s_scaleout_capacity_cold / _warm, bench/k8s-proof.bench.ts);
 *  - k8s_pod_create_ready_noprobe: the same for an idle container of the runtime image without a probe;
 *  - k8s_pod_delete_gone: graceful delete of a pod-app Pod (grace 30 s, UID precondition) → its UID
 *    gone from the API (SIGTERM to PID 1, which exits at once; the kubelet finalizes with grace 0);
 *  - k8s_node_memory_per_pod: with HELD (default 10) idle runtime-image Pods Ready at once, the growth
 *    of the node's memory (RSS of its cgroup root: containers and pause, + its containerd shims)
 *    over the node with none, divided by HELD.
 * p50/p99 over PODS Pods (default 20) of each kind, one at a time; client-side clock.
 */
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { startCluster, stopCluster } from "../k8s/local-cluster/cluster.ts";
import { loadKubeconfig } from "../k8s/local-cluster/control-plane/kubeconfig.ts";
import { realNodeDir, type RealNodeRecord } from "../k8s/local-cluster/node/real-node.ts";
import { freshNamespace, isReady, waitForPod } from "../test/k8s/support/cluster-client.ts";
import { bundlePodApp, containerAppPod, runtimeImage } from "../test/k8s/support/container-app.ts";
import { quantile, recordMetrics, round } from "./support/results.ts";

const PODS = Number(process.env.BENCH_PODS ?? 20);
const HELD = Number(process.env.BENCH_HELD_PODS ?? 10);

const idlePod = (name: string, image: string): V1Pod => ({
  metadata: { name },
  spec: {
    restartPolicy: "Never",
    terminationGracePeriodSeconds: 5,
    containers: [
      {
        name: "idle",
        image,
        imagePullPolicy: "IfNotPresent",
        command: [
          "/usr/local/bin/node",
          "-e",
          "setInterval(() => undefined, 1e9); process.on('SIGTERM', () => process.exit(0))",
        ],
        resources: { requests: { cpu: "10m" } },
      },
    ],
  },
});

/** RSS (bytes) of the node's cgroup root (memory hierarchy, total_rss) plus its containerd shims. */
function nodeRss(runDir: string, cgroupRoot: string): number {
  const stat = readFileSync(join("/sys/fs/cgroup/memory", cgroupRoot, "memory.stat"), "utf8");
  const cg = Number(/^total_rss (\d+)$/m.exec(stat)?.[1] ?? 0);
  let shims = 0;
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const cmd = readFileSync(`/proc/${e}/cmdline`, "utf8");
      if (!cmd.startsWith("/usr/bin/containerd-shim") || !cmd.includes(runDir)) continue;
      shims += Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${e}/status`, "utf8"))?.[1] ?? 0) * 1024;
    } catch {
      /* gone meanwhile */
    }
  }
  return cg + shims;
}

const runDir = await mkdtemp(join(tmpdir(), "drover-k8s-bench-"));
try {
  const image = await runtimeImage();
  const t0 = performance.now();
  const info = await startCluster(runDir, { images: [image.archive] });
  const startup = performance.now() - t0;
  const node = JSON.parse(
    readFileSync(join(realNodeDir(runDir, info.nodeName), "node.json"), "utf8"),
  ) as RealNodeRecord;
  const fixture = bundlePodApp(join(runDir, "fixture"));
  const kc = loadKubeconfig(info.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const ns = await freshNamespace(core, "bench");

  const createReady = async (pod: V1Pod): Promise<{ ms: number; uid: string }> => {
    const name = pod.metadata?.name ?? "";
    const t = performance.now();
    const created = await core.createNamespacedPod({ namespace: ns, body: pod });
    const ready = await waitForPod(kc, core, ns, name, isReady, 120_000);
    const ms = performance.now() - t;
    if (!ready?.status?.podIP) throw new Error(`pod ${name} Ready without a Pod IP`);
    return { ms, uid: created.metadata?.uid ?? "" };
  };
  const deleteGone = async (name: string, uid: string, grace: number): Promise<number> => {
    const t = performance.now();
    await core.deleteNamespacedPod({
      name,
      namespace: ns,
      body: { gracePeriodSeconds: grace, preconditions: { uid } },
    });
    await waitForPod(kc, core, ns, name, (p) => p === undefined || p.metadata?.uid !== uid, 120_000);
    return performance.now() - t;
  };

  const ready: number[] = [];
  const gone: number[] = [];
  const readyNoProbe: number[] = [];
  for (let i = 0; i < PODS; i++) {
    const app = await createReady(containerAppPod(`app-${i}`, image.ref, fixture));
    ready.push(app.ms);
    gone.push(await deleteGone(`app-${i}`, app.uid, 30));
    const idle = await createReady(idlePod(`idle-${i}`, image.ref));
    readyNoProbe.push(idle.ms);
    await deleteGone(`idle-${i}`, idle.uid, 5);
  }

  // Node memory per Pod: the node with no Pod, then with HELD idle runtime-image Pods Ready at once.
  const before = nodeRss(runDir, node.cgroupRoot);
  const held = await Promise.all(Array.from({ length: HELD }, (_, i) => createReady(idlePod(`held-${i}`, image.ref))));
  await new Promise((r) => setTimeout(r, 2_000)); // let the runtimes settle after start-up
  const after = nodeRss(runDir, node.cgroupRoot);
  await Promise.all(held.map((h, i) => deleteGone(`held-${i}`, h.uid, 5)));

  const dist = (xs: number[], note: string) => ({
    unit: "ms",
    value: round(quantile(xs, 0.5), 0),
    p50: round(quantile(xs, 0.5), 0),
    p99: round(quantile(xs, 0.99), 0),
    note,
  });
  const metrics = {
    k8s_cluster_startup: {
      unit: "ms",
      value: round(startup, 0),
      note: "local cluster with a real node: etcd + kube-apiserver v1.34, scheduler, controller manager, containerd + upstream kubelet (runtime image imported), Node Ready and untainted, CRDs Established, gateway serving; one sample",
    },
    k8s_pod_create_ready: dist(
      ready,
      `createNamespacedPod → Ready (watch), cold (new sandbox + container, image on the node; warm pool claims: k8s_scaleout_capacity_warm), ${PODS} pod-app containers one at a time (HTTP readiness probe every 1 s), real node`,
    ),
    k8s_pod_create_ready_noprobe: dist(
      readyNoProbe,
      `createNamespacedPod → Ready (watch), cold, ${PODS} idle runtime-image containers one at a time, no readiness probe, real node`,
    ),
    k8s_pod_delete_gone: dist(
      gone,
      `graceful delete (grace 30 s, UID precondition) → UID gone (watch), ${PODS} pod-app containers whose PID 1 exits at once on SIGTERM, real node`,
    ),
    k8s_node_memory_per_pod: {
      unit: "MiB",
      value: round((after - before) / HELD / 2 ** 20, 1),
      note: `(node RSS with ${HELD} idle runtime-image Pods Ready − with none) ÷ ${HELD}; node RSS = total_rss of its cgroup root (containers + pause) + its containerd shims' VmRSS`,
    },
  };
  await recordMetrics(metrics);
  console.log(JSON.stringify(metrics, null, 2));
} finally {
  await stopCluster(runDir);
  await rm(runDir, { recursive: true, force: true });
}
