import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { extraPodCidr, readClusterInfo, startKubelet, type ClusterInfo } from "../../k8s/local-cluster/cluster.ts";
import { stopDaemon, type DaemonRecord } from "../../k8s/local-cluster/lib/daemon.ts";
import { processStartTime } from "../../k8s/local-cluster/lib/proc.ts";
import { clusterClients, eventually, freshNamespace, isReady, waitForPod } from "./support/cluster-client.ts";
import { appPod, httpGet, APP_HTTP_PORT } from "./support/pod-app.ts";

// This file runs its own second kubelet (its own Node, state dir and pod CIDR) so that killing it
// cannot disturb the cluster's main kubelet.
let kc: KubeConfig;
let core: CoreV1Api;
let ns: string;
let info: ClusterInfo;
const node = `restart-${randomBytes(3).toString("hex")}`;
const recordFile = (): string => join(info.runDir, `kubelet-${node}.json`);

beforeAll(async () => {
  ({ kc, core } = clusterClients());
  ns = await freshNamespace(core, "restart");
  const i = await readClusterInfo(inject("k8sRunDir"));
  if (!i) throw new Error("no local cluster info");
  info = i;
});
afterAll(async () => {
  if (info) await stopDaemon(recordFile());
});

const alive = (pid: number): boolean => processStartTime(pid) !== undefined;

async function readyPid(name: string): Promise<{ pid: number; ip: string; uid: string }> {
  const p = await waitForPod(kc, core, ns, name, isReady);
  const body = (await httpGet(`http://${p?.status?.podIP}:${APP_HTTP_PORT}/`)).body;
  return { pid: body?.pid ?? -1, ip: p?.status?.podIP ?? "", uid: p?.metadata?.uid ?? "" };
}

describe("the process kubelet survives its own restart, against the local cluster's real API server", () => {
  it("a restarted kubelet adopts the processes it can prove are its own, reports the exit code of one that ended while it was down, finalizes a Pod deleted meanwhile and stops the process of a Pod that no longer exists", async () => {
    const first: DaemonRecord = await startKubelet(info, { nodeName: node, podCidr: extraPodCidr(info, 1) });
    const nodeObj = await core.readNode({ name: node });
    expect(nodeObj.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    for (const name of ["keep", "drain", "orphan", "quitter"])
      await core.createNamespacedPod({ namespace: ns, body: appPod(name, { nodeName: node }) });
    const [keep, drain, orphan, quitter] = [
      await readyPid("keep"),
      await readyPid("drain"),
      await readyPid("orphan"),
      await readyPid("quitter"),
    ];

    process.kill(first.pid, "SIGKILL");
    await eventually(async () => (alive(first.pid) ? undefined : true), 5_000, "kubelet killed");
    // While no kubelet runs: a process exits on its own, a Pod is deleted gracefully (stays
    // Terminating) and one is force-deleted (object gone at once).
    await httpGet(`http://${quitter.ip}:${APP_HTTP_PORT}/exit?code=5`).catch(() => undefined);
    await eventually(async () => (alive(quitter.pid) ? undefined : true), 5_000, "quitter exited");
    await core.deleteNamespacedPod({
      name: "drain",
      namespace: ns,
      body: { gracePeriodSeconds: 30, preconditions: { uid: drain.uid } },
    });
    await core.deleteNamespacedPod({
      name: "orphan",
      namespace: ns,
      body: { gracePeriodSeconds: 0, preconditions: { uid: orphan.uid } },
    });
    expect((await core.readNamespacedPod({ name: "drain", namespace: ns })).metadata?.deletionTimestamp).toBeDefined();
    expect([alive(keep.pid), alive(drain.pid), alive(orphan.pid)]).toEqual([true, true, true]);

    await startKubelet(info, { nodeName: node, podCidr: extraPodCidr(info, 1) }); // resolves after adoption and clean-up
    expect(alive(orphan.pid)).toBe(false);
    await waitForPod(kc, core, ns, "drain", (p) => p === undefined, 15_000);
    expect(alive(drain.pid)).toBe(false);
    const quit = await waitForPod(
      kc,
      core,
      ns,
      "quitter",
      (p) => p?.status?.containerStatuses?.[0]?.state?.terminated !== undefined,
      5_000,
    );
    expect(quit?.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(5); // read from the wrapper's exit file
    expect(quit?.status?.phase).toBe("Failed");

    const adopted = await core.readNamespacedPod({ name: "keep", namespace: ns });
    expect(isReady(adopted)).toBe(true);
    expect(adopted.status?.podIP).toBe(keep.ip);
    expect(adopted.status?.containerStatuses?.[0]?.restartCount).toBe(0);
    expect((await httpGet(`http://${keep.ip}:${APP_HTTP_PORT}/`)).body?.pid).toBe(keep.pid); // the same process, not a new one

    // The adopted process is watched like an own child: its death shows within a second.
    const t0 = Date.now();
    process.kill(keep.pid, "SIGTERM");
    const after = await waitForPod(
      kc,
      core,
      ns,
      "keep",
      (p) => p?.status?.containerStatuses?.[0]?.state?.terminated !== undefined,
      5_000,
    );
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(after?.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(0); // pod-app exits 0 on SIGTERM
  });
});
