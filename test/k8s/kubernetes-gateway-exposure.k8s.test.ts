import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CoreV1Api, CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import type { RuntimeCommand, RuntimeInstanceId } from "../../contracts/index.ts";
import { GATEWAY_API, type SharedGateway } from "../../platform/hosts/kubernetes/routes.ts";
import { L, runtimeNames } from "../../platform/hosts/kubernetes/spec.ts";
import { createKubernetesStrategy, type KubernetesStrategyOptions } from "../../platform/hosts/kubernetes/strategy.ts";
import type { HostStrategy } from "../../platform/hosts/types.ts";
import { closeRuntimeClients, sendCommand } from "../../platform/runtime-client.ts";
import { hostSpec } from "../support/host-processes.ts";
import { uniqueName } from "../support/isolation.ts";
import type { RunningServer } from "../../platform/local-servers.ts";
import { runtimePodOptions, startPodReachableNats } from "./support/runtime-pods.ts";
import { clusterClients, freshNamespace } from "./support/cluster-client.ts";
import { APP_COMMAND } from "./support/pod-app.ts";

// The `gateway` exposure of KubernetesHostStrategy against the local cluster's real API server and
// its local gateway (Gateway class `drover-local`, h2c for gRPC): the route layer is proven by a
// real GetQueueStatus through the shared Gateway with the routing header.
const RUNTIME_CMD = runtimePodOptions().command;
let kc: KubeConfig;
let core: CoreV1Api;
let custom: CustomObjectsApi;
let ns: string;
let infra: string;
let nats: RunningServer;
const streamTag = uniqueName("k8sgw");
const strategies: HostStrategy[] = [];

const gateway = (patch: Partial<SharedGateway> = {}): SharedGateway => ({
  name: "shared",
  namespace: infra,
  className: "drover-local",
  httpPort: 8080,
  grpcPort: 8081,
  ...patch,
});
function strategy(patch: Partial<KubernetesStrategyOptions> = {}): HostStrategy {
  const s = createKubernetesStrategy({
    kubeconfig: kc,
    namespace: ns,
    ...runtimePodOptions(),
    exposure: "gateway",
    gateway: gateway(),
    routeTimeoutMs: 20_000,
    ...patch,
  });
  strategies.push(s);
  return s;
}
const appStrategy = (patch: Partial<KubernetesStrategyOptions>) =>
  strategy({ command: APP_COMMAND, baseEnv: { HTTP_PORT: "8080" }, ...patch });
const spec = (id: string, transport: "http" | "grpc" = "http") =>
  hostSpec({ runtimeInstanceId: uniqueName(id), transport, natsUrl: nats.url, streamTag });
const queueStatus = (id: string): RuntimeCommand => ({
  operation: "GetQueueStatus",
  payload: {},
  runtimeInstanceId: id as RuntimeInstanceId,
  correlationId: randomUUID(),
});
const leftovers = async (id: string) => {
  const sel = { namespace: ns, labelSelector: `${L.runtime}=${id}` };
  const routes = await Promise.all(
    ["httproutes", "grpcroutes"].map(
      (plural) =>
        custom.listNamespacedCustomObject({ ...GATEWAY_API, plural, ...sel }) as Promise<{ items: unknown[] }>,
    ),
  );
  return [
    ...(await core.listNamespacedPod(sel)).items,
    ...(await core.listNamespacedService(sel)).items,
    ...(await core.listNamespacedSecret(sel)).items,
    ...routes.flatMap((r) => r.items),
  ];
};

beforeAll(async () => {
  ({ kc, core, custom } = clusterClients());
  [ns, infra] = await Promise.all([freshNamespace(core, "runtimes"), freshNamespace(core, "infra")]);
  nats = await startPodReachableNats();
});

afterAll(async () => {
  closeRuntimeClients();
  await Promise.all(strategies.map((s) => s.close()));
  await nats?.stop();
});

describe("KubernetesHostStrategy gateway exposure, against the local cluster's real API server and local gateway", () => {
  for (const transport of ["grpc", "http"] as const) {
    it(`a ${transport} runtime Pod answers GetQueueStatus with its own id through the shared Gateway and the routing header; a repeated start converges; kill removes its route`, async () => {
      const s = spec(`rt-gw-${transport}`, transport);
      const strat = strategy();
      const r = await strat.start(s);
      if (r.outcome === "rejected") throw new Error(`start rejected: ${JSON.stringify(r.reason)}`);
      expect(r.layersPassed).toEqual(["resource", "host", "endpoint", "route"]);
      const names = runtimeNames("drover-rt", s.runtimeInstanceId);
      expect(r.endpoint.route).toEqual({
        kind: transport === "grpc" ? "GRPCRoute" : "HTTPRoute",
        name: names.route,
        namespace: ns,
      });
      expect(r.endpoint.endpoint).toMatch(
        transport === "grpc" ? /^127\.0\.\d+\.\d+:8081$/ : /^http:\/\/127\.0\.\d+\.\d+:8080$/,
      );
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
      // A repeated start revalidates the Pod and the route, and converges.
      expect(await strat.start(s)).toMatchObject({
        outcome: "converged",
        convergenceSource: "lifecycle-cache",
        endpoint: r.endpoint,
      });
      const killed = await strat.kill(s.runtimeInstanceId, r.host, 20_000);
      expect(killed).toMatchObject({ outcome: "killed", proof: { kind: "pod-uid-gone", podUid: r.host.podUid } });
      expect(await leftovers(s.runtimeInstanceId)).toEqual([]);
    });
  }

  it("never publishes a Ready Pod whose runtime answers through the Gateway as another id (route-probe-identity-mismatch), and deletes what it created", async () => {
    const s = spec("rt-gw-impostor");
    // The runtime inside believes it is someone else: the Gateway routes to it, it answers with its own id.
    const r = await strategy({
      // (The image has no `env`: node sets the variable, then loads the bundled runtime.)
      command: [
        "/usr/local/bin/node",
        "-e",
        `process.env.DROVER_RUNTIME_INSTANCE_ID = "${uniqueName("rt-other")}"; import("${RUNTIME_CMD.at(-1)}");`,
      ],
    }).start(s);
    expect(r).toMatchObject({ outcome: "rejected", reason: { code: "route-probe-identity-mismatch" }, layer: "route" });
    expect(r.owned.map((o) => o.split(":")[0])).toEqual(["Secret", "Pod", "Service", "HTTPRoute"]);
    expect(await leftovers(s.runtimeInstanceId)).toEqual([]);
  });

  it("a route its Gateway does not admit is route-not-accepted at once, not a hang", async () => {
    await custom.createNamespacedCustomObject({
      ...GATEWAY_API,
      plural: "gateways",
      namespace: infra,
      body: {
        apiVersion: `${GATEWAY_API.group}/v1`,
        kind: "Gateway",
        metadata: { name: "same-namespace-only" },
        spec: { gatewayClassName: "drover-local", listeners: [{ name: "http", protocol: "HTTP", port: 8080 }] },
      },
    });
    const s = spec("rt-gw-refused");
    const t0 = Date.now();
    const r = await appStrategy({ gateway: gateway({ name: "same-namespace-only" }) }).start(s);
    expect(r).toMatchObject({
      outcome: "rejected",
      reason: { code: "route-not-accepted", detail: expect.stringContaining("NotAllowedByListeners") as string },
      layer: "route",
    });
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(await leftovers(s.runtimeInstanceId)).toEqual([]);
  });

  it("a Gateway no controller programs is gateway-not-ready within the route budget", async () => {
    const s = spec("rt-gw-nocontroller");
    const r = await appStrategy({
      gateway: gateway({ name: "orphan", className: "no-such-controller" }),
      routeTimeoutMs: 3_000,
    }).start(s);
    expect(r).toMatchObject({ outcome: "rejected", reason: { code: "gateway-not-ready" }, layer: "route" });
    expect(await leftovers(s.runtimeInstanceId)).toEqual([]);
  });
});
