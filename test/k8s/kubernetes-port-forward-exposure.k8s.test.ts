import { randomUUID } from "node:crypto";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { isDroverError, type RuntimeCommand, type RuntimeInstanceId } from "../../contracts/index.ts";
import { labelValue } from "../../platform/hosts/kubernetes/names.ts";
import { openPodForward } from "../../platform/hosts/kubernetes/pod-forward.ts";
import { L, RUNTIME_PORT, runtimeNames } from "../../platform/hosts/kubernetes/spec.ts";
import { createKubernetesStrategy, type KubernetesStrategyOptions } from "../../platform/hosts/kubernetes/strategy.ts";
import type { HostStrategy } from "../../platform/hosts/types.ts";
import { closeRuntimeClients, sendCommand } from "../../platform/runtime-client.ts";
import type { RunningServer } from "../../platform/local-servers.ts";
import { hostSpec } from "../support/host-processes.ts";
import { uniqueName } from "../support/isolation.ts";
import { clusterClients, eventually, freshNamespace, waitForPod } from "./support/cluster-client.ts";
import { containerHostPids } from "./support/container-app.ts";
import { runtimePodOptions, startPodReachableNats } from "./support/runtime-pods.ts";

// The `port-forward` exposure of KubernetesHostStrategy on the local cluster's real node: each
// connection to the strategy's local listener is a WebSocket to the real kube-apiserver's
// pods/portforward, tunnelled to the upstream kubelet's streaming server and containerd, which dials
// the runtime's port inside the Pod's network namespace. Every command below crosses that path.
let kc: KubeConfig;
let core: CoreV1Api;
let ns: string;
let nats: RunningServer;
const streamTag = uniqueName("k8spf");
const strategies: HostStrategy[] = [];

function strategy(patch: Partial<KubernetesStrategyOptions> = {}): HostStrategy {
  const s = createKubernetesStrategy({
    kubeconfig: kc,
    namespace: ns,
    ...runtimePodOptions(),
    exposure: "port-forward",
    routeTimeoutMs: 20_000,
    ...patch,
  });
  strategies.push(s);
  return s;
}
const spec = (id: string, transport: "http" | "grpc" = "http") =>
  hostSpec({ runtimeInstanceId: uniqueName(id), transport, natsUrl: nats.url, streamTag });
const queueStatus = (id: string): RuntimeCommand => ({
  operation: "GetQueueStatus",
  payload: {},
  runtimeInstanceId: id as RuntimeInstanceId,
  correlationId: randomUUID(),
});
const hostPortOf = (endpoint: string) => endpoint.replace(/^http:\/\//, "");
const refused = (hostPort: string) =>
  new Promise<boolean>((ok) => {
    const i = hostPort.lastIndexOf(":");
    const s = connect(Number(hostPort.slice(i + 1)), hostPort.slice(0, i));
    s.once("connect", () => {
      s.destroy();
      ok(false);
    });
    s.once("error", () => ok(true));
  });
const leftovers = async (id: string) => {
  const sel = { namespace: ns, labelSelector: `${L.runtime}=${labelValue(id)}` };
  return [
    ...(await core.listNamespacedPod(sel)).items.map((o) => `Pod:${o.metadata?.name}`),
    ...(await core.listNamespacedService(sel)).items.map((o) => `Service:${o.metadata?.name}`),
    ...(await core.listNamespacedSecret(sel)).items.map((o) => `Secret:${o.metadata?.name}`),
  ];
};

beforeAll(async () => {
  ({ kc, core } = clusterClients());
  ns = await freshNamespace(core, "runtimes");
  nats = await startPodReachableNats();
});

afterAll(async () => {
  closeRuntimeClients();
  await Promise.all(strategies.map((s) => s.close()));
  await nats?.stop();
});

describe("KubernetesHostStrategy port-forward exposure, through the real API server's pods/portforward to the upstream kubelet", () => {
  for (const transport of ["http", "grpc"] as const) {
    it(`a ${transport} runtime answers GetQueueStatus with its own id and Pod UID at the local listener; a repeated start converges; kill closes the listener before the Pod UID goes`, async () => {
      const s = spec(`rt-pf-${transport}`, transport);
      const strat = strategy();
      const t0 = Date.now();
      const r = await strat.start(s);
      if (r.outcome === "rejected") throw new Error(`start rejected: ${JSON.stringify(r.reason)}`);
      console.info(`[timing] ${transport} port-forward: start → route layer proven ${Date.now() - t0} ms`);
      expect(r.layersPassed).toEqual(["resource", "host", "endpoint", "route"]);
      const pod = await core.readNamespacedPod({
        namespace: ns,
        name: runtimeNames("drover-rt", s.runtimeInstanceId).pod,
      });
      const direct = `${pod.status?.podIP}:${RUNTIME_PORT[transport]}`;
      expect(r.endpoint.aliases).toEqual([transport === "http" ? `http://${direct}` : direct]);
      expect(r.endpoint.endpoint).toMatch(transport === "http" ? /^http:\/\/127\.0\.0\.1:\d+$/ : /^127\.0\.0\.1:\d+$/);
      for (let i = 0; i < 3; i++) {
        const answer = await sendCommand(
          r.endpoint.endpoint,
          transport,
          queueStatus(s.runtimeInstanceId),
          s.commandToken,
          5_000,
        );
        expect(answer).toMatchObject({
          success: true,
          runtimeInstanceId: s.runtimeInstanceId,
          hostIncarnation: r.host.hostIncarnation,
        });
      }
      expect(await strat.start(s)).toMatchObject({
        outcome: "converged",
        convergenceSource: "lifecycle-cache",
        endpoint: r.endpoint,
      });
      const killed = await strat.kill(s.runtimeInstanceId, r.host, 20_000);
      expect(killed).toMatchObject({ outcome: "killed", proof: { kind: "pod-uid-gone", podUid: r.host.podUid } });
      expect(await refused(hostPortOf(r.endpoint.endpoint))).toBe(true);
      expect(await leftovers(s.runtimeInstanceId)).toEqual([]);
    });
  }

  it("a dropped tunnel is re-established while the Pod lives: the next connection opens a new one to the same runtime", async () => {
    const s = spec("rt-pf-drop", "grpc");
    // A second forward of our own to a port-forward runtime's Pod, so that the test can drop its tunnels.
    const r = await strategy().start(s);
    if (r.outcome === "rejected") throw new Error(`start rejected: ${JSON.stringify(r.reason)}`);
    const fwd = await openPodForward(kc, ns, r.host.podName ?? "", RUNTIME_PORT.grpc);
    try {
      const ask = () => sendCommand(fwd.address, "grpc", queueStatus(s.runtimeInstanceId), s.commandToken, 5_000);
      expect(await ask()).toMatchObject({ success: true, hostIncarnation: r.host.hostIncarnation });
      const before = fwd.stats().tunnels;
      expect(before).toBeGreaterThanOrEqual(1);
      fwd.dropTunnels();
      // The gRPC channel sees its connection end and reconnects: a new tunnel, the same runtime.
      const again = await eventually(
        async () => ask().catch(() => undefined),
        15_000,
        "GetQueueStatus through a fresh tunnel",
      );
      expect(again).toMatchObject({ success: true, hostIncarnation: r.host.hostIncarnation });
      expect(fwd.stats().tunnels).toBeGreaterThan(before);
      expect(fwd.stats().failures).toBe(0);
    } finally {
      await fwd.close();
    }
  });

  it("kill → recovery through the forward: a SIGKILLed runtime fails fast at its listener (no hang), the fence closes the listener, and the replacement runtime answers through its own", async () => {
    const strat = strategy();
    const victim = spec("rt-pf-victim");
    const r = await strat.start(victim);
    if (r.outcome === "rejected") throw new Error(`start rejected: ${JSON.stringify(r.reason)}`);
    const ask = (endpoint: string, sp = victim) =>
      sendCommand(endpoint, "http", queueStatus(sp.runtimeInstanceId), sp.commandToken, 5_000);
    expect(await ask(r.endpoint.endpoint)).toMatchObject({ success: true, hostIncarnation: r.host.hostIncarnation });
    const pod = await core.readNamespacedPod({ namespace: ns, name: r.host.podName ?? "" });
    const pids = containerHostPids(
      inject("k8sCgroupRoot"),
      r.host.podUid ?? "",
      pod.status?.containerStatuses?.[0]?.containerID ?? "",
    );
    expect(pids.length).toBeGreaterThan(0);
    process.kill(pids[0]!, "SIGKILL");
    await waitForPod(
      kc,
      core,
      ns,
      r.host.podName ?? "",
      (p) => p?.status?.containerStatuses?.[0]?.state?.terminated !== undefined,
    );
    // The Pod (same UID) still exists, the runtime does not: the forward's tunnel fails, the caller is told at once.
    const t0 = Date.now();
    const err = await ask(r.endpoint.endpoint).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isDroverError(err, "runtime-unreachable"), String(err)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(5_000);

    const t1 = Date.now();
    const killed = await strat.kill(victim.runtimeInstanceId, r.host, 20_000);
    expect(killed).toMatchObject({ outcome: "killed", proof: { kind: "pod-uid-gone", podUid: r.host.podUid } });
    expect(await refused(hostPortOf(r.endpoint.endpoint))).toBe(true);
    const replacement = spec("rt-pf-replacement");
    const r2 = await strat.start(replacement);
    if (r2.outcome === "rejected") throw new Error(`start rejected: ${JSON.stringify(r2.reason)}`);
    console.info(`[timing] port-forward kill → fenced → replacement answering: ${Date.now() - t1} ms`);
    expect(r2.endpoint.endpoint).not.toBe(r.endpoint.endpoint);
    expect(await ask(r2.endpoint.endpoint, replacement)).toMatchObject({
      success: true,
      runtimeInstanceId: replacement.runtimeInstanceId,
      hostIncarnation: r2.host.hostIncarnation,
    });
  });

  it("a runtime Pod deleted behind the strategy's back: the forward retires itself (connections refused) and a converging start is rejected", async () => {
    const strat = strategy();
    const s = spec("rt-pf-deleted");
    const r = await strat.start(s);
    if (r.outcome === "rejected") throw new Error(`start rejected: ${JSON.stringify(r.reason)}`);
    await core.deleteNamespacedPod({
      namespace: ns,
      name: r.host.podName ?? "",
      body: { gracePeriodSeconds: 0, preconditions: { uid: r.host.podUid ?? "" } },
    });
    await waitForPod(kc, core, ns, r.host.podName ?? "", (p) => p === undefined);
    const hostPort = hostPortOf(r.endpoint.endpoint);
    // The first connection's tunnel fails (the Pod is gone); that failure makes the forward read the Pod and close.
    await eventually(
      async () => {
        await sendCommand(r.endpoint.endpoint, "http", queueStatus(s.runtimeInstanceId), s.commandToken, 2_000).catch(
          () => undefined,
        );
        return (await refused(hostPort)) ? true : undefined;
      },
      15_000,
      `listener ${hostPort} closed`,
    );
    expect(await strat.start(s)).toMatchObject({ outcome: "rejected", layer: "host" });
  });
});
