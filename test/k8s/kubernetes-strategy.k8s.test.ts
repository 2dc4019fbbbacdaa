import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import type { RuntimeCommand, RuntimeInstanceId } from "../../contracts/index.ts";
import { buildTokenSecret, L, runtimeNames } from "../../platform/hosts/kubernetes/spec.ts";
import { createKubernetesStrategy, type KubernetesStrategyOptions } from "../../platform/hosts/kubernetes/strategy.ts";
import type { HostObservation, HostStrategy } from "../../platform/hosts/types.ts";
import { closeRuntimeClients, sendCommand } from "../../platform/runtime-client.ts";
import { hostSpec } from "../support/host-processes.ts";
import { uniqueName } from "../support/isolation.ts";
import type { RunningServer } from "../../platform/local-servers.ts";
import {
  auditedPodDeletes,
  clusterClients,
  eventually,
  freshNamespace,
  isReady,
  waitForPod,
} from "./support/cluster-client.ts";
import { appHostPid, appPod, APP_COMMAND } from "./support/pod-app.ts";
import { runtimePodOptions, startPodReachableNats } from "./support/runtime-pods.ts";

// KubernetesHostStrategy against the local cluster's real API server (real UIDs, 409s, graceful
// deletion, UID preconditions, watches) and its real node (upstream kubelet, containerd, runc).
// Runtime Pods run the real runtime from the runtime image against a private nats-server on the
// node's address; lifecycle-only tests run a cheaper inline program in the same image, which listens
// on the ports the runtime would.
let kc: KubeConfig;
let core: CoreV1Api;
let ns: string;
let nats: RunningServer;
const streamTag = uniqueName("k8s");
const started: HostStrategy[] = [];

function strategy(patch: Partial<KubernetesStrategyOptions> = {}): HostStrategy {
  const s = createKubernetesStrategy({
    kubeconfig: kc,
    namespace: ns,
    ...runtimePodOptions(),
    readinessTimeoutMs: 60_000,
    killGraceSeconds: 5,
    ...patch,
  });
  started.push(s);
  return s;
}
const appStrategy = (patch: Partial<KubernetesStrategyOptions> = {}) =>
  strategy({ command: APP_COMMAND, baseEnv: { HTTP_PORT: "8080", TERM_DELAY_MS: "1500" }, ...patch });
const spec = (patch: Parameters<typeof hostSpec>[0] = {}) => hostSpec({ natsUrl: nats.url, streamTag, ...patch });
const podsOf = async (id: string) =>
  (await core.listNamespacedPod({ namespace: ns, labelSelector: `${L.runtime}=${id}` })).items;
const queueStatus = (id: string): RuntimeCommand => ({
  operation: "GetQueueStatus",
  payload: {},
  runtimeInstanceId: id as RuntimeInstanceId,
  correlationId: randomUUID(),
});

beforeAll(async () => {
  ({ kc, core } = clusterClients());
  ns = await freshNamespace(core, "hosts");
  nats = await startPodReachableNats();
});

afterAll(async () => {
  closeRuntimeClients();
  await Promise.all(started.map((s) => s.close()));
  await nats?.stop();
});

describe("KubernetesHostStrategy against the local cluster's real API server", () => {
  it("converges duplicate concurrent starts (one strategy twice, a second replica once) on one Pod, whose runtime answers GetQueueStatus with its own id over the Pod IP", async () => {
    const s = spec({ runtimeInstanceId: uniqueName("rt-dup") });
    const replicaA = strategy();
    const results = await Promise.all([replicaA.start(s), replicaA.start(s), strategy().start(s)]);
    expect(results.map((r) => r.outcome).sort()).toEqual(["converged", "converged", "created"]);
    // Within replica A its lifecycle gate serializes the two starts; across replicas the 409 is adopted after the identity check.
    expect(results.map((r) => (r.outcome === "converged" ? r.convergenceSource : r.outcome)).sort()).toEqual([
      "created",
      "existing-pod",
      "lifecycle-cache",
    ]);
    const uids = new Set(results.map((r) => (r.outcome === "rejected" ? "" : r.host.podUid)));
    expect(uids.size).toBe(1);
    const pods = await podsOf(s.runtimeInstanceId);
    expect(pods.map((p) => p.metadata?.uid)).toEqual([...uids]);
    const created = results.find((r) => r.outcome === "created");
    if (created?.outcome !== "created") throw new Error("no created result");
    expect(created.host.hostIncarnation).toBe(`pod:${pods[0]?.metadata?.uid}`);
    expect(created.endpoint.endpoint).toBe(`http://${pods[0]?.status?.podIP}:8080`);
    const answer = await sendCommand(
      created.endpoint.endpoint,
      "http",
      queueStatus(s.runtimeInstanceId),
      s.commandToken,
      5_000,
    );
    expect(answer).toMatchObject({
      success: true,
      runtimeInstanceId: s.runtimeInstanceId,
      hostIncarnation: created.host.hostIncarnation,
    });
    // A later start on the same strategy converges from its lifecycle cache after revalidating the Pod.
    const again = await replicaA.start(s);
    expect(again).toMatchObject({
      outcome: "converged",
      convergenceSource: "lifecycle-cache",
      host: { podUid: created.host.podUid },
    });
  });

  it("never adopts or deletes a foreign Pod with the same name (host-identity-collision) and removes only the Secret it created", async () => {
    const s = spec({ runtimeInstanceId: uniqueName("rt-foreign") });
    const names = runtimeNames("drover-rt", s.runtimeInstanceId);
    const foreign = await core.createNamespacedPod({
      namespace: ns,
      body: appPod(names.pod, { labels: { app: "someone-else" } }),
    });
    const r = await appStrategy().start(s);
    expect(r).toMatchObject({ outcome: "rejected", reason: { code: "host-identity-collision" }, layer: "resource" });
    expect(r.owned).toEqual([expect.stringMatching(new RegExp(`^Secret:${ns}/${names.secret}:`))]);
    const still = await core.readNamespacedPod({ namespace: ns, name: names.pod });
    expect(still.metadata?.uid).toBe(foreign.metadata?.uid);
    expect(still.metadata?.deletionTimestamp).toBeUndefined();
    await expect(core.readNamespacedSecret({ namespace: ns, name: names.secret })).rejects.toMatchObject({ code: 404 });
  });

  it("a start whose Pod fails reports pod-failed and deletes the Pod and Service it created, but not the Secret it adopted", async () => {
    const s = spec({ runtimeInstanceId: uniqueName("rt-fail") });
    const names = runtimeNames("drover-rt", s.runtimeInstanceId);
    const pre = await core.createNamespacedSecret({
      namespace: ns,
      body: buildTokenSecret(s, { namespace: ns, command: [], image: "x" }),
    });
    const r = await strategy({ command: ["/usr/local/bin/node", "-e", "process.exit(3)"] }).start(s);
    expect(r).toMatchObject({ outcome: "rejected", reason: { code: "pod-failed" }, layer: "host" });
    expect(r.owned.map((o) => o.split(":")[0])).toEqual(["Pod", "Service"]);
    expect(await podsOf(s.runtimeInstanceId)).toEqual([]);
    await expect(core.readNamespacedService({ namespace: ns, name: names.service })).rejects.toMatchObject({
      code: 404,
    });
    expect((await core.readNamespacedSecret({ namespace: ns, name: names.secret })).metadata?.uid).toBe(
      pre.metadata?.uid,
    );
  });

  it("reports the Pod's incarnation to onHostCreated before readiness, and when that hook rejects deletes what it created and rethrows", async () => {
    const s = spec({ runtimeInstanceId: uniqueName("rt-hook") });
    const names = runtimeNames("drover-rt", s.runtimeInstanceId);
    let seen: string | undefined;
    const start = appStrategy().start(s, undefined, async (h) => {
      seen = h.hostIncarnation;
      throw new Error("the store refused host-started");
    });
    await expect(start).rejects.toThrow("the store refused host-started");
    expect(seen).toMatch(/^pod:[0-9a-f-]{36}$/);
    expect(await podsOf(s.runtimeInstanceId)).toEqual([]);
    await expect(core.readNamespacedSecret({ namespace: ns, name: names.secret })).rejects.toMatchObject({ code: 404 });
  });

  it("kill removes the runtime's Service and Secret while its Pod terminates, not after the UID is gone, and returns once both are done", async () => {
    const s = spec({ runtimeInstanceId: uniqueName("rt-kill-objects") });
    const names = runtimeNames("drover-rt", s.runtimeInstanceId);
    const strat = appStrategy();
    const r = await strat.start(s);
    if (r.outcome === "rejected") throw new Error(`start rejected: ${JSON.stringify(r.reason)}`);
    let podGoneAt = 0;
    const podGone = waitForPod(kc, core, ns, names.pod, (p) => {
      if (p === undefined) podGoneAt = Date.now();
      return p === undefined;
    });
    const killing = strat.kill(s.runtimeInstanceId, r.host, 20_000);
    // The fixture exits 1.5 s after SIGTERM (grace 5 s): the Pod lingers that long, its Service need not.
    const serviceGoneAt = await eventually(
      async () =>
        (await core.readNamespacedService({ namespace: ns, name: names.service }).then(
          () => false,
          (e: { code?: number }) => e.code === 404,
        ))
          ? Date.now()
          : undefined,
      20_000,
      "the runtime's Service deleted",
    );
    const killed = await killing;
    await podGone;
    expect(killed).toMatchObject({ outcome: "killed", proof: { kind: "pod-uid-gone", podUid: r.host.podUid } });
    expect(serviceGoneAt).toBeLessThan(podGoneAt);
    await expect(core.readNamespacedSecret({ namespace: ns, name: names.secret })).rejects.toMatchObject({ code: 404 });
    await expect(core.readNamespacedService({ namespace: ns, name: names.service })).rejects.toMatchObject({
      code: 404,
    });
  });

  it("kill of a Pod whose runtime already exited (every container terminated per its kubelet, restartPolicy Never) is one grace-0 delete preconditioned on its UID (audit log), and returns once that UID is gone", async () => {
    const s = spec({ runtimeInstanceId: uniqueName("rt-exited") });
    const names = runtimeNames("drover-rt", s.runtimeInstanceId);
    const strat = appStrategy();
    const r = await strat.start(s);
    if (r.outcome === "rejected") throw new Error(`start rejected: ${JSON.stringify(r.reason)}`);
    const uid = r.host.podUid ?? "";
    process.kill(appHostPid(await core.readNamespacedPod({ namespace: ns, name: names.pod })), "SIGKILL");
    await waitForPod(
      kc,
      core,
      ns,
      names.pod,
      (p) => p?.status?.containerStatuses?.[0]?.state?.terminated !== undefined,
    );
    const killed = await strat.kill(s.runtimeInstanceId, r.host, 20_000);
    expect(killed).toMatchObject({ outcome: "killed", proof: { kind: "pod-uid-gone", podUid: uid } });
    expect(await podsOf(s.runtimeInstanceId)).toEqual([]);
    const deletes = await eventually(
      async () => {
        const d = await auditedPodDeletes(inject("k8sRunDir"), ns, names.pod);
        return d.some((x) => x.gracePeriodSeconds === 0) ? d : undefined;
      },
      5_000,
      "the grace-0 delete audited",
    );
    expect(deletes).toEqual([{ code: 200, gracePeriodSeconds: 0, preconditionUid: uid }]);
  });

  it("kill with health's exit evidence (a lost connection) is one grace-0 delete at once, before the kubelet reports the exit; even where the evidence were wrong, the node then stops the container of the removed Pod", async () => {
    const strat = appStrategy();
    const victims = [uniqueName("rt-lost"), uniqueName("rt-wrong")];
    const runs = await Promise.all(victims.map((id) => strat.start(spec({ runtimeInstanceId: id }))));
    const pods = await Promise.all(
      victims.map((id) => core.readNamespacedPod({ namespace: ns, name: runtimeNames("drover-rt", id).pod })),
    );
    const pids = pods.map(appHostPid);
    expect(pids.every((p) => p > 0)).toBe(true);
    // The first really died a moment ago (the kubelet's next relist has not reported it yet); the
    // second is alive: evidence that is wrong, which the fence must still end at the host.
    process.kill(pids[0]!, "SIGKILL");
    for (const [i, r] of runs.entries()) {
      if (r.outcome === "rejected") throw new Error(`start rejected: ${JSON.stringify(r.reason)}`);
      const uid = r.host.podUid ?? "";
      const killed = await strat.kill(victims[i]!, r.host, 20_000, { exitEvidence: "its connection was lost" });
      expect(killed).toMatchObject({ outcome: "killed", proof: { kind: "pod-uid-gone", podUid: uid } });
      expect(killed.outcome === "killed" && killed.proof.kind === "pod-uid-gone" && killed.proof.observedBy).toMatch(
        /grace 0 at once: its connection was lost/,
      );
      const name = runtimeNames("drover-rt", victims[i]!).pod;
      const deletes = await eventually(
        async () => {
          const d = await auditedPodDeletes(inject("k8sRunDir"), ns, name);
          return d.length > 0 ? d : undefined;
        },
        5_000,
        "the grace-0 delete audited",
      );
      expect(deletes).toEqual([{ code: 200, gracePeriodSeconds: 0, preconditionUid: uid }]);
    }
    // The live one's process is ended by its kubelet once the Pod is gone from the API.
    await eventually(
      async () => {
        try {
          process.kill(pids[1]!, 0);
          return undefined;
        } catch {
          return true;
        }
      },
      30_000,
      "the removed Pod's live container stopped by the node",
    );
  });

  it("kill returns only once the exact Pod UID is gone, reports pod-deleted, and never deletes a replacement with the same name", async () => {
    const s = spec({ runtimeInstanceId: uniqueName("rt-kill") });
    const names = runtimeNames("drover-rt", s.runtimeInstanceId);
    const strat = appStrategy();
    const r = await strat.start(s);
    if (r.outcome === "rejected") throw new Error(`start rejected: ${JSON.stringify(r.reason)}`);
    const uid = r.host.podUid ?? "";
    let stop = (): void => undefined;
    const deletedFact = new Promise<HostObservation>((ok, fail) => {
      const timer = setTimeout(() => fail(new Error("no pod-deleted fact within 30 s")), 30_000);
      stop = strat.observe((f) => {
        if (f.kind === "pod-deleted" && f.hostIncarnation === `pod:${uid}`) {
          clearTimeout(timer);
          ok(f);
        }
      });
    });
    const t0 = Date.now();
    const killed = await strat.kill(s.runtimeInstanceId, r.host, 20_000);
    // The fixture delays its exit by 1.5 s after SIGTERM: a kill that returned on delete acceptance would be faster.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_500);
    expect(killed).toMatchObject({
      outcome: "killed",
      proof: { kind: "pod-uid-gone", podUid: uid, podName: names.pod, namespace: ns },
    });
    const after = await core.listNamespacedPod({ namespace: ns, fieldSelector: `metadata.name=${names.pod}` });
    expect(after.items.map((p) => p.metadata?.uid)).not.toContain(uid);
    await waitForPod(kc, core, ns, names.pod, (p) => p === undefined);
    const replacement = await core.createNamespacedPod({
      namespace: ns,
      body: appPod(names.pod, { labels: { app: "replacement" } }),
    });
    await waitForPod(kc, core, ns, names.pod, isReady);
    const again = await strat.kill(s.runtimeInstanceId, r.host, 10_000);
    expect(again).toMatchObject({ outcome: "killed", proof: { podUid: uid } });
    const survivor = await core.readNamespacedPod({ namespace: ns, name: names.pod });
    expect(survivor.metadata?.uid).toBe(replacement.metadata?.uid);
    expect(survivor.metadata?.deletionTimestamp).toBeUndefined();
    expect(await deletedFact).toMatchObject({
      kind: "pod-deleted",
      runtimeInstanceId: s.runtimeInstanceId,
      hostIncarnation: `pod:${uid}`,
    });
    stop();
  });
});
