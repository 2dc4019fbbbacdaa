import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreV1Api, type KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { startCluster, stopCluster, type ClusterInfo } from "../../k8s/local-cluster/cluster.ts";
import { loadKubeconfig } from "../../k8s/local-cluster/control-plane/kubeconfig.ts";
import { apiFailure } from "../../k8s/local-cluster/lib/api-errors.ts";
import { cgroupRootExists } from "../../k8s/local-cluster/node/cgroups.ts";
import {
  anyKubeletRunning,
  realNodeDir,
  SHARED_HOST_DIRS,
  type RealNodeRecord,
} from "../../k8s/local-cluster/node/real-node.ts";
import { auditedPodDeletes, eventually, freshNamespace, isReady, waitForPod } from "./support/cluster-client.ts";
import { bundlePodApp, containerAppPod, containerHostPids, runtimeImage } from "./support/container-app.ts";
import { httpGet, APP_HTTP_PORT } from "./support/pod-app.ts";

// Boundary: the upstream kubelet v1.34.4 with containerd and runc (a private real-node cluster of this
// file, started and torn down here), kube-scheduler and kube-controller-manager, the runtime image
// `make image` builds. What only a real node shows: namespaces, PID 1, exit 137, real grace periods.
const run = promisify(execFile);
let info: ClusterInfo;
let runDir: string;
let kc: KubeConfig;
let core: CoreV1Api;
let ns: string;
let image: string;
let node: RealNodeRecord;
let stopped = false;

beforeAll(async () => {
  runDir = await mkdtemp(join(tmpdir(), "drover-k8s-real-"));
  const img = await runtimeImage();
  image = img.ref;
  const t0 = Date.now();
  info = await startCluster(runDir, { images: [img.archive] });
  console.info(`[timing] real-node cluster up (runtime image imported): ${Date.now() - t0} ms`);
  kc = loadKubeconfig(info.kubeconfig);
  core = kc.makeApiClient(CoreV1Api);
  ns = await freshNamespace(core, "real");
  node = JSON.parse(readFileSync(join(realNodeDir(runDir, info.nodeName), "node.json"), "utf8")) as RealNodeRecord;
  bundlePodApp(join(runDir, "fixture"));
});

afterAll(async () => {
  if (!stopped) await stopCluster(runDir);
  await rm(runDir, { recursive: true, force: true });
});

async function createReady(pod: V1Pod): Promise<V1Pod> {
  const t0 = Date.now();
  await core.createNamespacedPod({ namespace: ns, body: pod });
  const ready = await waitForPod(kc, core, ns, pod.metadata?.name ?? "", isReady, 60_000);
  if (!ready) throw new Error("pod vanished");
  console.info(`[timing] ${pod.metadata?.name}: create → Ready ${Date.now() - t0} ms`);
  return ready;
}

const kubectl = async (...args: string[]): Promise<string> =>
  (await run("kubectl", ["--kubeconfig", info.kubeconfig, "-n", ns, ...args])).stdout;

describe("a real node: upstream kubelet, containerd and runc, Pods from drover's runtime image", () => {
  it("the node registers as system:node:<name> (a v1.34.4 kubelet on containerd 1.6), NodeRestriction keeps it off other Nodes, and a scheduled Pod from the imported image is Ready on a bridge address with kubectl logs and exec working", async () => {
    const n = await core.readNode({ name: info.nodeName });
    expect(n.status?.nodeInfo?.kubeletVersion).toBe("v1.34.4");
    expect(n.status?.nodeInfo?.containerRuntimeVersion).toMatch(/^containerd:\/\/1\.6\./);
    expect(n.status?.addresses).toContainEqual({ type: "InternalIP", address: node.net.nodeIp });
    expect(n.spec?.taints ?? []).toEqual([]); // the controller manager's node lifecycle controller lifted not-ready

    // The kubelet's own credentials: may read its Node, may not label another one.
    const asNode = loadKubeconfig(join(realNodeDir(runDir, info.nodeName), "kubelet.kubeconfig"));
    await core.createNode({ body: { metadata: { name: "someone-else" } } });
    const patched = await asNode
      .makeApiClient(CoreV1Api)
      .patchNode({ name: "someone-else", body: [{ op: "add", path: "/metadata/labels", value: { x: "y" } }] })
      .then(
        () => undefined,
        (e: unknown) => apiFailure(e),
      );
    expect(patched?.code).toBe(403);
    await core.deleteNode({ name: "someone-else" });

    const p = await createReady(containerAppPod("web", image, join(runDir, "fixture")));
    expect(p.spec?.nodeName).toBe(info.nodeName);
    expect(p.status?.conditions?.find((c) => c.type === "PodScheduled")?.status).toBe("True");
    expect(p.status?.hostIP).toBe(node.net.nodeIp);
    expect(p.status?.podIP?.startsWith(node.net.podCidr.replace(/0\/24$/, ""))).toBe(true);
    expect(p.status?.containerStatuses?.[0]?.imageID).toMatch(/sha256:[0-9a-f]{64}$/);
    const answer = await httpGet(`http://${p.status?.podIP}:${APP_HTTP_PORT}/`);
    expect(answer.body).toMatchObject({ name: "web", uid: p.metadata?.uid, ip: p.status?.podIP, pid: 1 });

    expect(await kubectl("exec", "web", "--", "/usr/local/bin/node", "-e", "console.log(process.getuid())")).toBe(
      "10001\n",
    );
    const logs = await kubectl("logs", "web");
    expect(typeof logs).toBe("string"); // served by the kubelet's API (would be an error without one)
  });

  it("the runtime image starts its bundle through the loader and the V8 code cache made at build: as user 10001 on the node, the image's node accepts that cache", async () => {
    await createReady(containerAppPod("cache", image, join(runDir, "fixture")));
    // What runtime-loader.cjs does at a start, for the file the image's entrypoint names, without starting it.
    const check = `const l = require("/app/runtime-loader.cjs"); const { Script } = require("node:vm");
const file = l.codeCacheFile("/app/runtime.cjs", process.version, []);
const s = new Script(l.wrap(l.readSource("/app/runtime.cjs")), { filename: "/app/runtime.cjs", cachedData: require("node:fs").readFileSync(file) });
console.log(JSON.stringify({ uid: process.getuid(), file, rejected: s.cachedDataRejected }));`;
    const out = JSON.parse(await kubectl("exec", "cache", "--", "/usr/local/bin/node", "-e", check)) as unknown;
    expect(out).toEqual({
      uid: 10001,
      file: expect.stringMatching(/^\/app\/runtime\.cjs\.[0-9a-f]{16}\.v8cache$/),
      rejected: false,
    });
  });

  it("a container SIGKILLed from the host reports exit 137 for the exact UID; a namesake gets a new UID and is never mistaken for the old one; a delete preconditioned on the old UID is 409", async () => {
    const old = await createReady(containerAppPod("victim", image, join(runDir, "fixture")));
    const oldUid = old.metadata?.uid ?? "";
    const pids = containerHostPids(node.cgroupRoot, oldUid, old.status?.containerStatuses?.[0]?.containerID ?? "");
    expect(pids.length).toBeGreaterThan(0);
    const t0 = Date.now();
    process.kill(pids[0]!, "SIGKILL");
    const dead = await waitForPod(
      kc,
      core,
      ns,
      "victim",
      (p) => p?.status?.containerStatuses?.[0]?.state?.terminated !== undefined,
    );
    console.info(`[timing] SIGKILL → terminated reported: ${Date.now() - t0} ms`);
    expect(dead?.metadata?.uid).toBe(oldUid);
    expect(dead?.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(137);
    const failed = await waitForPod(kc, core, ns, "victim", (p) => p?.status?.phase === "Failed");
    expect(failed?.metadata?.uid).toBe(oldUid);

    await core.deleteNamespacedPod({ namespace: ns, name: "victim", body: { gracePeriodSeconds: 0 } });
    await waitForPod(kc, core, ns, "victim", (p) => p === undefined || p.metadata?.uid !== oldUid);
    const fresh = await createReady(containerAppPod("victim", image, join(runDir, "fixture")));
    expect(fresh.metadata?.uid).not.toBe(oldUid);
    const stale = await core
      .deleteNamespacedPod({ namespace: ns, name: "victim", body: { preconditions: { uid: oldUid } } })
      .then(
        () => undefined,
        (e: unknown) => apiFailure(e),
      );
    expect(stale?.code).toBe(409);
    expect((await core.readNamespacedPod({ namespace: ns, name: "victim" })).metadata?.uid).toBe(fresh.metadata?.uid);
  });

  it("PID 1 that exits on SIGTERM: a delete with the default 30 s grace period is gone in well under it, and the kubelet's final delete is grace 0 preconditioned on the UID (audit log)", async () => {
    const p = await createReady(containerAppPod("graceful", image, join(runDir, "fixture")));
    const uid = p.metadata?.uid ?? "";
    const t0 = Date.now();
    await core.deleteNamespacedPod({ namespace: ns, name: "graceful" });
    await waitForPod(kc, core, ns, "graceful", (x) => x === undefined);
    const ms = Date.now() - t0;
    console.info(`[timing] default-grace delete → UID gone: ${ms} ms`);
    expect(ms).toBeLessThan(10_000);
    const deletes = await eventually(
      async () => {
        const d = await auditedPodDeletes(runDir, ns, "graceful");
        return d.some((x) => x.gracePeriodSeconds === 0) ? d : undefined;
      },
      5_000,
      "kubelet's final delete audited",
    );
    expect(deletes).toContainEqual({ code: 200, gracePeriodSeconds: 0, preconditionUid: uid });
  });

  it("teardown removes every process, mount, link, cgroup and host directory the node created", async () => {
    const nodeDir = realNodeDir(runDir, info.nodeName);
    await stopCluster(runDir);
    stopped = true;
    const procs = readdirSync("/proc").filter((e) => {
      if (!/^\d+$/.test(e)) return false;
      try {
        return readFileSync(`/proc/${e}/cmdline`, "utf8").includes(runDir);
      } catch {
        return false;
      }
    });
    expect(procs).toEqual([]);
    expect(readFileSync("/proc/self/mountinfo", "utf8").includes(runDir)).toBe(false);
    const ipLinks = (await run("ip", ["-o", "link", "show"])).stdout;
    expect(ipLinks.includes(`${node.net.bridge}:`) || ipLinks.includes(`master ${node.net.bridge} `)).toBe(false);
    expect(cgroupRootExists(node.cgroupRoot)).toBe(false);
    expect(existsSync(nodeDir)).toBe(false);
    const cache = "/var/lib/cni/results";
    expect(existsSync(cache) ? readdirSync(cache).filter((f) => f.startsWith(`${node.net.cniName}-`)) : []).toEqual([]);
    const links = "/var/log/containers";
    expect(
      existsSync(links) ? readdirSync(links).filter((f) => readlinkSync(join(links, f)).startsWith(runDir)) : [],
    ).toEqual([]);
    // Fixed host paths the kubelet, the shims and CNI create: gone unless another cluster's node still runs.
    if (!anyKubeletRunning()) expect(SHARED_HOST_DIRS.filter((d) => existsSync(d))).toEqual([]);
  });
});
