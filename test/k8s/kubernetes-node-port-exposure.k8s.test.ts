import { randomUUID } from "node:crypto";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CoreV1Api, KubeConfig, V1Service } from "@kubernetes/client-node";
import type { DroverEvent, RuntimeCommand, RuntimeInstanceId } from "../../contracts/index.ts";
import { labelValue } from "../../platform/hosts/kubernetes/names.ts";
import { buildNodePortService, L, runtimeNames } from "../../platform/hosts/kubernetes/spec.ts";
import { createKubernetesStrategy, type KubernetesStrategyOptions } from "../../platform/hosts/kubernetes/strategy.ts";
import type { HostSpec, HostStrategy } from "../../platform/hosts/types.ts";
import { closeRuntimeClients, sendCommand } from "../../platform/runtime-client.ts";
import { hostSpec } from "../support/host-processes.ts";
import { uniqueName } from "../support/isolation.ts";
import { provisionerFixture, type ProvisionerFixture } from "../support/provisioner-fixture.ts";
import type { RunningServer } from "../../platform/local-servers.ts";
import { runtimePodOptions, startPodReachableNats } from "./support/runtime-pods.ts";
import { clusterClients, eventually, freshNamespace, isReady, waitForPod } from "./support/cluster-client.ts";

// The `node-port` exposure of KubernetesHostStrategy against the local cluster's real API server
// (which allocates the node ports) and its userspace node-port proxy (the local gateway process,
// standing in for kube-proxy): the route layer is proven by a real GetQueueStatus sent to
// <node InternalIP>:<nodePort>.
const RUNTIME_CMD = runtimePodOptions().command;
let kc: KubeConfig;
let core: CoreV1Api;
let ns: string;
let nats: RunningServer;
let prov: ProvisionerFixture | undefined;
const streamTag = uniqueName("k8snp");
const strategies: HostStrategy[] = [];

function strategy(patch: Partial<KubernetesStrategyOptions> = {}): HostStrategy {
  const s = createKubernetesStrategy({
    kubeconfig: kc,
    namespace: ns,
    ...runtimePodOptions(),
    exposure: "node-port",
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
const leftovers = async (id: string) => {
  const sel = { namespace: ns, labelSelector: `${L.runtime}=${labelValue(id)}` };
  const named = (kind: string, items: readonly { metadata?: { name?: string } }[]) =>
    items.map((o) => `${kind}:${o.metadata?.name}`);
  return [
    ...named("Pod", (await core.listNamespacedPod(sel)).items),
    ...named("Service", (await core.listNamespacedService(sel)).items),
    ...named("Secret", (await core.listNamespacedSecret(sel)).items),
  ];
};
const refused = (hostPort: string) =>
  new Promise<boolean>((ok) => {
    const [host, port] = [
      hostPort.slice(0, hostPort.lastIndexOf(":")),
      Number(hostPort.slice(hostPort.lastIndexOf(":") + 1)),
    ];
    const s = connect(port, host);
    s.once("connect", () => {
      s.destroy();
      ok(false);
    });
    s.once("error", () => ok(true));
  });
/** A NodePort Service that carries `victim`'s name and identity (so the strategy adopts it) but selects `other`'s Pod. */
const hijackingService = (victim: HostSpec, other: HostSpec): V1Service => {
  const svc = buildNodePortService(victim, { namespace: ns, command: RUNTIME_CMD, image: "x" });
  return {
    ...svc,
    spec: {
      ...svc.spec,
      selector: {
        [L.runtime]: labelValue(other.runtimeInstanceId),
        [L.controlPlane]: labelValue(other.controlPlaneId),
      },
    },
  };
};

beforeAll(async () => {
  ({ kc, core } = clusterClients());
  ns = await freshNamespace(core, "runtimes");
  nats = await startPodReachableNats();
});

afterAll(async () => {
  closeRuntimeClients();
  await prov?.close();
  await Promise.all(strategies.map((s) => s.close()));
  await nats?.stop();
});

describe("KubernetesHostStrategy node-port exposure, against the local cluster's real API server and its node-port proxy", () => {
  for (const transport of ["http", "grpc"] as const) {
    it(`a ${transport} runtime Pod answers GetQueueStatus with its own id at <node InternalIP>:<nodePort> of its NodePort Service; a repeated start converges; kill removes the Service and the Pod UID`, async () => {
      const s = spec(`rt-np-${transport}`, transport);
      const names = runtimeNames("drover-rt", s.runtimeInstanceId);
      const strat = strategy();
      const t0 = Date.now();
      let readyAt = 0;
      const readyWatch = waitForPod(
        kc,
        core,
        ns,
        names.pod,
        (p) => {
          if (isReady(p)) readyAt = Date.now();
          return isReady(p);
        },
        60_000,
      );
      const r = await strat.start(s);
      const probedAt = Date.now();
      await readyWatch;
      if (r.outcome === "rejected") throw new Error(`start rejected: ${JSON.stringify(r.reason)}`);
      console.info(
        `[timing] ${transport} node-port: start → Pod Ready ${readyAt - t0} ms, Pod Ready → NodePort Service + probe ok ${probedAt - readyAt} ms`,
      );
      expect(r.layersPassed).toEqual(["resource", "host", "endpoint", "route"]);

      const svc = await core.readNamespacedService({ namespace: ns, name: names.nodePort });
      const nodePort = svc.spec?.ports?.[0]?.nodePort ?? 0;
      expect(svc.spec).toMatchObject({
        type: "NodePort",
        selector: { [L.runtime]: labelValue(s.runtimeInstanceId), [L.controlPlane]: labelValue(s.controlPlaneId) },
        ports: [
          {
            port: transport === "grpc" ? 9090 : 8080,
            targetPort: transport,
            appProtocol: transport === "grpc" ? "kubernetes.io/h2c" : "http",
          },
        ],
      });
      expect(svc.metadata?.labels?.[L.managedBy]).toBe("drover-control-plane");
      expect(nodePort).toBeGreaterThanOrEqual(30000);
      // The node address is the Pod's hostIP, which is its Node's InternalIP (its bridge address, not 127.0.0.1).
      const pod = await core.readNamespacedPod({ namespace: ns, name: names.pod });
      const node = await core.readNode({ name: pod.spec?.nodeName ?? "" });
      const internalIP = node.status?.addresses?.find((a) => a.type === "InternalIP")?.address;
      expect(pod.status?.hostIP).toBe(internalIP);
      const hostPort = `${internalIP}:${nodePort}`;
      expect(r.endpoint).toEqual({
        endpoint: transport === "http" ? `http://${hostPort}` : hostPort,
        aliases: [transport === "http" ? `http://${pod.status?.podIP}:8080` : `${pod.status?.podIP}:9090`],
      });

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
      expect(await strat.start(s)).toMatchObject({
        outcome: "converged",
        convergenceSource: "lifecycle-cache",
        endpoint: r.endpoint,
      });

      const killed = await strat.kill(s.runtimeInstanceId, r.host, 20_000);
      expect(killed).toMatchObject({ outcome: "killed", proof: { kind: "pod-uid-gone", podUid: r.host.podUid } });
      expect(await leftovers(s.runtimeInstanceId)).toEqual([]);
      // The proxy closes the node port once it sees the Service deleted.
      await eventually(
        async () => ((await refused(hostPort)) ? true : undefined),
        10_000,
        `node port ${hostPort} closed`,
      );
    });
  }

  it("a NodePort Service that leads to another runtime is node-port-probe-identity-mismatch: nothing is returned and what the start created is deleted", async () => {
    const other = spec("rt-np-other");
    const b = await strategy({ exposure: "pod-ip" }).start(other);
    if (b.outcome === "rejected") throw new Error(`start rejected: ${JSON.stringify(b.reason)}`);
    const s = spec("rt-np-victim");
    const names = runtimeNames("drover-rt", s.runtimeInstanceId);
    // Same name and identity (adopted), but its selector picks the other runtime's Pod.
    const svc = await core.createNamespacedService({ namespace: ns, body: hijackingService(s, other) });
    const r = await strategy().start(s);
    expect(r).toMatchObject({
      outcome: "rejected",
      reason: {
        code: "node-port-probe-identity-mismatch",
        detail: expect.stringContaining(`actual=${other.runtimeInstanceId}`) as string,
      },
      layer: "route",
    });
    // The adopted Service was not created by this start, so it is not deleted by it.
    expect(r.owned.map((o) => o.split(":")[0])).toEqual(["Secret", "Pod", "Service"]);
    expect(await leftovers(s.runtimeInstanceId)).toEqual([`Service:${names.nodePort}`]);
    await core.deleteNamespacedService({
      namespace: ns,
      name: names.nodePort,
      body: { preconditions: { uid: svc.metadata?.uid ?? "" } },
    });
  });

  it("a provisioner on node-port exposure never publishes endpoint or capacity for a runtime whose node port answers as another runtime", async () => {
    prov = await provisionerFixture(nats.url);
    const other = spec("rt-np-other2");
    const real = strategy();
    const b = await strategy({ exposure: "pod-ip" }).start(other);
    if (b.outcome === "rejected") throw new Error(`start rejected: ${JSON.stringify(b.reason)}`);
    // In front of the real strategy: before each start, a Service carrying that runtime's identity but leading to `other`.
    const hijacking: HostStrategy = {
      ...real,
      start: async (sp, signal, onHost) => {
        await core.createNamespacedService({ namespace: ns, body: hijackingService(sp, other) });
        return real.start(sp, signal, onHost);
      },
    };
    const { provisioner } = prov.provisioner({}, {}, () => hijacking);
    const requested = await prov.request("tenant-np", other.controlPlaneId);
    await provisioner.handle(requested);
    const events = await prov.settled("tenant-np", requested.event.correlationId);
    const last = events.at(-1)?.event as DroverEvent;
    expect(last).toMatchObject({
      type: "scaleout.rejected",
      data: { reason: { code: "node-port-probe-identity-mismatch" } },
    });
    const id = last.type === "scaleout.rejected" ? (last.data.runtimeInstanceId as string) : "";
    const types = (await prov.runtimeEvents(id)).map((e) => e.event.type);
    expect(types).toContain("runtime.host-start-failed");
    expect(types).not.toContain("runtime.endpoint-published");
    expect(types).not.toContain("runtime.capacity-published");
    // Only the hijacking Service (not the start's to delete) is left of that runtime.
    expect(await leftovers(id)).toEqual([`Service:${runtimeNames("drover-rt", id).nodePort}`]);
  });
});
