import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { inject, describe, expect, it, beforeAll } from "vitest";
import type { CoreV1Api, KubeConfig, V1Pod } from "@kubernetes/client-node";
import { apiFailure } from "../../k8s/local-cluster/lib/api-errors.ts";
import { processStartTime } from "../../k8s/local-cluster/lib/proc.ts";
import {
  auditedPodDeletes,
  clusterClients,
  eventually,
  freshNamespace,
  isReady,
  waitForPod,
} from "./support/cluster-client.ts";
import { appHostPid, appPod, httpGet, APP_HTTP_PORT } from "./support/pod-app.ts";

// Pods on the k8s tier's real node (global-setup.ts): the upstream kubelet v1.34.4 with containerd
// and runc, scheduled by kube-scheduler; each Pod is a container of the runtime image running the
// pod-app fixture as PID 1 in its own namespaces, on the node's CNI bridge.

const run = promisify(execFile);
let kc: KubeConfig;
let core: CoreV1Api;
let ns: string;

beforeAll(async () => {
  ({ kc, core } = clusterClients());
  ns = await freshNamespace(core, "pods");
});

async function createReady(pod: V1Pod): Promise<V1Pod> {
  await core.createNamespacedPod({ namespace: ns, body: pod });
  const ready = await waitForPod(kc, core, ns, pod.metadata?.name ?? "", isReady);
  if (!ready) throw new Error("pod vanished");
  return ready;
}

const terminatedState = (p: V1Pod | undefined) => p?.status?.containerStatuses?.[0]?.state?.terminated;
const gone = (pid: number): boolean => processStartTime(pid) === undefined;

describe("Pods as containers on the real node, against the local cluster's real API server", () => {
  it("a Pod created through @kubernetes/client-node is scheduled, becomes Running and Ready with its own bridge IP and answers HTTP on it as PID 1; creating it again is 409 AlreadyExists", async () => {
    const t0 = Date.now();
    const a = await createReady(appPod("web-a"));
    console.info(`[timing] pod create → Ready: ${Date.now() - t0} ms`);
    const b = await createReady(appPod("web-b"));
    for (const p of [a, b]) {
      expect(p.status?.phase).toBe("Running");
      expect(p.spec?.nodeName).toBe("drover-local-node"); // bound by kube-scheduler
      expect(p.status?.conditions?.find((c) => c.type === "PodScheduled")?.status).toBe("True");
      expect(p.status?.podIP?.startsWith(inject("k8sPodCidr").replace(/0\/24$/, ""))).toBe(true);
      expect(p.status?.podIPs).toEqual([{ ip: p.status?.podIP }]);
      // The node's bridge address, which is its InternalIP and where node ports listen.
      expect(p.status?.hostIP).toBe(inject("k8sNodeIp"));
      expect(p.status?.startTime).toBeDefined();
      expect(
        p.status?.conditions
          ?.filter((c) => c.status === "True")
          .map((c) => c.type)
          .sort(),
      ).toEqual(["ContainersReady", "Initialized", "PodReadyToStartContainers", "PodScheduled", "Ready"]);
      const cs = p.status?.containerStatuses?.[0];
      expect(cs).toMatchObject({ name: "app", ready: true, started: true, restartCount: 0 });
      expect(cs?.state?.running?.startedAt).toBeDefined();
    }
    expect(a.status?.podIP).not.toBe(b.status?.podIP);
    const answer = await httpGet(`http://${a.status?.podIP}:${APP_HTTP_PORT}/`);
    expect(answer.body).toMatchObject({ name: "web-a", uid: a.metadata?.uid, ip: a.status?.podIP, pid: 1 });

    const again = await core.createNamespacedPod({ namespace: ns, body: appPod("web-a") }).then(
      () => undefined,
      (e: unknown) => apiFailure(e),
    );
    expect(again).toMatchObject({ code: 409, reason: "AlreadyExists" });
  });

  it("graceful deletion keeps the Pod Terminating until its process has exited, then the kubelet removes its UID with a grace-0 delete preconditioned on it (per the API server's audit log); a namesake gets a new UID and a delete preconditioned on the old UID is 409 and leaves it alone", async () => {
    const old = await createReady(appPod("graceful", { termDelayMs: 1500, graceSeconds: 20 }));
    const oldUid = old.metadata?.uid ?? "";
    const pid = appHostPid(old);
    expect(pid).toBeGreaterThan(0);

    const t0 = Date.now();
    // With a body, kube-apiserver ignores the query parameters (handlers/delete.go): the grace period must be in the body.
    await core.deleteNamespacedPod({
      name: "graceful",
      namespace: ns,
      body: { gracePeriodSeconds: 20, preconditions: { uid: oldUid } },
    });
    const terminating = await core.readNamespacedPod({ name: "graceful", namespace: ns });
    expect(terminating.metadata?.uid).toBe(oldUid);
    expect(terminating.metadata?.deletionTimestamp).toBeDefined();
    expect(gone(pid)).toBe(false); // still shutting down (it takes 1.5 s after SIGTERM)

    await waitForPod(kc, core, ns, "graceful", (p) => p === undefined || p.metadata?.uid !== oldUid);
    const goneAfter = Date.now() - t0;
    console.info(`[timing] pod delete → UID gone: ${goneAfter} ms (process needed 1500 ms after SIGTERM)`);
    expect(goneAfter).toBeGreaterThanOrEqual(1500);
    expect(gone(pid)).toBe(true);
    // What removed the UID, as the API server recorded it: our graceful delete, then the kubelet's
    // finalizing delete with grace 0 preconditioned on that UID (so it could never hit a namesake).
    // A delete's ResponseComplete audit event is written as its handler returns, which can be just
    // after a watcher saw the Pod go: wait for both entries, then check them exactly.
    const audited = await eventually(
      async () => {
        const a = await auditedPodDeletes(inject("k8sRunDir"), ns, "graceful");
        return a.length >= 2 ? a : undefined;
      },
      5_000,
      "both deletes in the audit log",
    );
    expect(audited).toEqual([
      { code: 200, gracePeriodSeconds: 20, preconditionUid: oldUid },
      { code: 200, gracePeriodSeconds: 0, preconditionUid: oldUid },
    ]);

    const fresh = await core.createNamespacedPod({ namespace: ns, body: appPod("graceful") });
    expect(fresh.metadata?.uid).not.toBe(oldUid);
    const stale = await core
      .deleteNamespacedPod({
        name: "graceful",
        namespace: ns,
        body: { gracePeriodSeconds: 0, preconditions: { uid: oldUid } },
      })
      .then(
        () => undefined,
        (e: unknown) => apiFailure(e),
      );
    expect(stale?.code).toBe(409);
    expect(stale?.message).toContain("the UID in the precondition");
    const survivor = await core.readNamespacedPod({ name: "graceful", namespace: ns });
    expect(survivor.metadata?.uid).toBe(fresh.metadata?.uid);
    expect(survivor.metadata?.deletionTimestamp).toBeUndefined();
  });

  it("a process that ignores SIGTERM is SIGKILLed when the grace period ends, and the Pod is finalized", async () => {
    const p = await createReady(appPod("stubborn", { termDelayMs: 600_000 }));
    const pid = appHostPid(p);
    expect(pid).toBeGreaterThan(0);
    const t0 = Date.now();
    await core.deleteNamespacedPod({
      name: "stubborn",
      namespace: ns,
      body: { gracePeriodSeconds: 2, preconditions: { uid: p.metadata?.uid } },
    });
    await waitForPod(kc, core, ns, "stubborn", (x) => x === undefined, 20_000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2000);
    expect(gone(pid)).toBe(true);
  });

  it("a container's main process SIGKILLed from the host behind the kubelet's back shows as terminated with exit 137 within the kubelet's relist period (1 s) and a status sync", async () => {
    const p = await createReady(appPod("victim"));
    const pid = appHostPid(p);
    expect(pid).toBeGreaterThan(0);
    const t0 = Date.now();
    process.kill(pid, "SIGKILL");
    const after = await waitForPod(kc, core, ns, "victim", (x) => terminatedState(x) !== undefined, 5_000);
    const took = Date.now() - t0;
    console.info(`[timing] container killed → terminated status: ${took} ms`);
    expect(took).toBeLessThan(3000);
    expect(terminatedState(after)).toMatchObject({ exitCode: 137, reason: "Error" });
    // The real kubelet reports the container's end first and the terminal phase only once its pod
    // worker has torn the sandbox down (a second status update): the two are not one event.
    const failed = await waitForPod(kc, core, ns, "victim", (x) => x?.status?.phase === "Failed", 10_000);
    expect(failed?.metadata?.uid).toBe(p.metadata?.uid);
    expect(isReady(failed)).toBe(false);
  });

  it("a container's own exit code is reported, and restartPolicy Always restarts it with a restart count and lastState", async () => {
    const never = await createReady(appPod("exits"));
    await httpGet(`http://${never.status?.podIP}:${APP_HTTP_PORT}/exit?code=3`).catch(() => undefined);
    const done = await waitForPod(kc, core, ns, "exits", (x) => terminatedState(x) !== undefined);
    expect(terminatedState(done)).toMatchObject({ exitCode: 3, reason: "Error" });
    expect((await waitForPod(kc, core, ns, "exits", (x) => x?.status?.phase === "Failed", 10_000))?.metadata?.uid).toBe(
      never.metadata?.uid,
    );

    const always = await createReady(appPod("restarts", { restartPolicy: "Always" }));
    await httpGet(`http://${always.status?.podIP}:${APP_HTTP_PORT}/exit?code=4`).catch(() => undefined);
    const back = await waitForPod(
      kc,
      core,
      ns,
      "restarts",
      (x) => (x?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 && isReady(x),
    );
    const cs = back?.status?.containerStatuses?.[0];
    expect(cs?.lastState?.terminated?.exitCode).toBe(4);
    expect(cs?.state?.running).toBeDefined();
    expect(back?.status?.podIP).toBe(always.status?.podIP);
    const answer = await eventually(
      async () => (await httpGet(`http://${back?.status?.podIP}:${APP_HTTP_PORT}/`)).body,
      10_000,
      "restarted container answers",
    );
    expect(answer.uid).toBe(always.metadata?.uid);
  });

  it("kubectl get pods -o wide shows what the tests see through the client", async () => {
    await createReady(appPod("listed"));
    const list = await core.listNamespacedPod({ namespace: ns });
    const { stdout } = await run("kubectl", ["get", "pods", "-o", "wide", "-n", ns], {
      env: { ...process.env, KUBECONFIG: inject("k8sKubeconfig") },
    });
    // Columns are aligned under the header (RESTARTS may read "1 (5s ago)"): cut by header offsets.
    const [header = "", ...lines] = stdout.trimEnd().split("\n");
    const starts = [...header.matchAll(/\S+(?: \S+)*/g)].map((m) => ({ name: m[0], at: m.index })); // "NOMINATED NODE" is one column
    const rows = new Map(
      lines.map((line) => {
        const row = Object.fromEntries(
          starts.map((c, i) => [c.name, line.slice(c.at, starts[i + 1]?.at ?? line.length).trim()]),
        );
        return [row.NAME, row];
      }),
    );
    expect(rows.size).toBe(list.items.length);
    for (const p of list.items) {
      const row = rows.get(p.metadata?.name ?? "");
      expect(row, p.metadata?.name).toBeDefined();
      expect(row?.IP).toBe(p.status?.podIP ?? "<none>");
      expect(row?.NODE).toBe(p.spec?.nodeName);
      // kubectl's STATUS: Terminating, else a terminated container's reason, else the phase.
      const terminated = p.status?.containerStatuses?.[0]?.state?.terminated?.reason;
      expect(row?.STATUS).toBe(p.metadata?.deletionTimestamp ? "Terminating" : (terminated ?? p.status?.phase));
    }
    expect(rows.get("listed")).toMatchObject({ READY: "1/1", STATUS: "Running" });
  });
});
