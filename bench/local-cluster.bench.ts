/**
 * The local Kubernetes cluster (k8s/local-cluster: real kube-apiserver + etcd, the process kubelet,
 * the local gateway), started privately the way the k8s test tier starts it (`startCluster` in a
 * temp dir, free loopback ports), then stopped with every Pod process. Needs `make k8s-build`.
 *
 *  - k8s_cluster_startup: startCluster() → API server ready, Gateway API CRDs Established, Node
 *    Ready, gateway serving (one sample per run);
 *  - k8s_pod_create_ready: createNamespacedPod → Ready=True seen by a watch, for the k8s tier's
 *    pod-app fixture (a node+tsx process answering HTTP on its Pod IP, readiness probe every 1 s);
 *  - k8s_pod_create_ready_noprobe: the same for a Pod running `sleep` with no readiness probe (the
 *    kubelet's own path: bind, spawn, status write);
 *  - k8s_pod_delete_gone: graceful delete of a pod-app Pod (grace 30 s, UID precondition) → its UID
 *    gone from the API (SIGTERM, the process exits at once, the kubelet finalizes with grace 0).
 * p50/p99 over PODS Pods (default 20) of each kind, one at a time; client-side clock.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { startCluster, stopCluster } from "../k8s/local-cluster/cluster.ts";
import { loadKubeconfig } from "../k8s/local-cluster/control-plane/kubeconfig.ts";
import { freshNamespace, isReady, waitForPod } from "../test/k8s/support/cluster-client.ts";
import { appPod } from "../test/k8s/support/pod-app.ts";
import { quantile, recordMetrics, round } from "./support/results.ts";

const PODS = Number(process.env.BENCH_PODS ?? 20);

const sleeperPod = (name: string): V1Pod => ({
  metadata: { name },
  spec: {
    restartPolicy: "Never",
    terminationGracePeriodSeconds: 5,
    containers: [{ name: "sleep", image: "drover.local/sleep:bench", command: ["sleep", "3600"] }],
  },
});

const runDir = await mkdtemp(join(tmpdir(), "drover-k8s-bench-"));
try {
  const t0 = performance.now();
  const info = await startCluster(runDir);
  const startup = performance.now() - t0;
  const kc = loadKubeconfig(info.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const ns = await freshNamespace(core, "bench");

  const createReady = async (pod: V1Pod): Promise<{ ms: number; uid: string }> => {
    const name = pod.metadata?.name ?? "";
    const t = performance.now();
    const created = await core.createNamespacedPod({ namespace: ns, body: pod });
    const ready = await waitForPod(kc, core, ns, name, isReady, 60_000);
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
    await waitForPod(kc, core, ns, name, (p) => p === undefined || p.metadata?.uid !== uid, 60_000);
    return performance.now() - t;
  };

  const ready: number[] = [];
  const gone: number[] = [];
  const readyNoProbe: number[] = [];
  for (let i = 0; i < PODS; i++) {
    const app = await createReady(appPod(`app-${i}`));
    ready.push(app.ms);
    gone.push(await deleteGone(`app-${i}`, app.uid, 30));
    const sleeper = await createReady(sleeperPod(`sleep-${i}`));
    readyNoProbe.push(sleeper.ms);
    await deleteGone(`sleep-${i}`, sleeper.uid, 5);
  }

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
      note: "local cluster: etcd + kube-apiserver v1.34 ready, Gateway API CRDs Established, Node Ready, gateway serving; one sample",
    },
    k8s_pod_create_ready: dist(
      ready,
      `createNamespacedPod → Ready (watch), ${PODS} pod-app Pods one at a time (node+tsx process, HTTP readiness probe every 1 s)`,
    ),
    k8s_pod_create_ready_noprobe: dist(
      readyNoProbe,
      `createNamespacedPod → Ready (watch), ${PODS} \`sleep\` Pods one at a time, no readiness probe`,
    ),
    k8s_pod_delete_gone: dist(
      gone,
      `graceful delete (grace 30 s, UID precondition) → UID gone (watch), ${PODS} pod-app Pods that exit at once on SIGTERM`,
    ),
  };
  await recordMetrics(metrics);
  console.log(JSON.stringify(metrics, null, 2));
} finally {
  await stopCluster(runDir);
  await rm(runDir, { recursive: true, force: true });
}
