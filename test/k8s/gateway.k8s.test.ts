import { status as grpcStatus } from "@grpc/grpc-js";
import { beforeAll, describe, expect, it } from "vitest";
import {
  PatchStrategy,
  setHeaderOptions,
  type CoreV1Api,
  type CustomObjectsApi,
  type KubeConfig,
} from "@kubernetes/client-node";
import { clusterClients, eventually, freshNamespace, isReady, waitForPod } from "./support/cluster-client.ts";
import { GW, ROUTING_HEADER, askOverGrpc, waitForProgrammedGateway, waitForRoute } from "./support/gateway.ts";
import { appPod, httpGet, APP_GRPC_PORT, APP_HTTP_PORT } from "./support/pod-app.ts";

// Per-runtime routing on one shared Gateway (infra-notes §5; design hosts.md "gateway" exposure):
// each runtime Pod has a Service, an HTTPRoute on the http listener and a GRPCRoute on the grpc
// listener, matching the routing header exactly.
let kc: KubeConfig;
let core: CoreV1Api;
let custom: CustomObjectsApi;
let ns: string;
let address: string;
const HTTP_LISTENER_PORT = 8080;
const GRPC_LISTENER_PORT = 8081;

const httpRoute = (name: string, runtimeId: string, service: string) => ({
  apiVersion: `${GW.group}/v1`,
  kind: "HTTPRoute",
  metadata: { name },
  spec: {
    parentRefs: [{ name: "shared", sectionName: "http" }],
    rules: [
      {
        matches: [
          {
            headers: [{ type: "Exact", name: ROUTING_HEADER, value: runtimeId }],
            path: { type: "PathPrefix", value: "/" },
          },
        ],
        backendRefs: [{ name: service, port: APP_HTTP_PORT }],
      },
    ],
  },
});
const grpcRoute = (name: string, runtimeId: string, service: string) => ({
  apiVersion: `${GW.group}/v1`,
  kind: "GRPCRoute",
  metadata: { name },
  spec: {
    parentRefs: [{ name: "shared", sectionName: "grpc" }],
    rules: [
      {
        matches: [{ headers: [{ type: "Exact", name: ROUTING_HEADER, value: runtimeId }] }],
        backendRefs: [{ name: service, port: APP_GRPC_PORT }],
      },
    ],
  },
});

async function runtime(id: string): Promise<string> {
  const name = `rt-${id}`;
  await core.createNamespacedPod({
    namespace: ns,
    body: appPod(name, { labels: { "drover.dev/runtime-instance-id": id } }),
  });
  await core.createNamespacedService({
    namespace: ns,
    body: {
      metadata: { name },
      spec: {
        selector: { "drover.dev/runtime-instance-id": id },
        ports: [
          { name: "http", port: APP_HTTP_PORT, targetPort: "http" as never },
          { name: "grpc", port: APP_GRPC_PORT, targetPort: "grpc" as never },
        ],
      },
    },
  });
  await custom.createNamespacedCustomObject({
    ...GW,
    plural: "httproutes",
    namespace: ns,
    body: httpRoute(name, id, name),
  });
  await custom.createNamespacedCustomObject({
    ...GW,
    plural: "grpcroutes",
    namespace: ns,
    body: grpcRoute(`${name}-grpc`, id, name),
  });
  await waitForPod(kc, core, ns, name, isReady);
  return name;
}

beforeAll(async () => {
  ({ kc, core, custom } = clusterClients());
  ns = await freshNamespace(core, "gw");
  await custom.createNamespacedCustomObject({
    ...GW,
    plural: "gateways",
    namespace: ns,
    body: {
      apiVersion: `${GW.group}/v1`,
      kind: "Gateway",
      metadata: { name: "shared" },
      spec: {
        gatewayClassName: "drover-local",
        listeners: [
          { name: "http", protocol: "HTTP", port: HTTP_LISTENER_PORT },
          {
            name: "grpc",
            protocol: "HTTP",
            port: GRPC_LISTENER_PORT,
            allowedRoutes: { kinds: [{ kind: "GRPCRoute" }] },
          },
        ],
      },
    },
  });
  await runtime("aaa111");
  await runtime("bbb222");
  address = await waitForProgrammedGateway(custom, ns, "shared");
});

describe("the local gateway routes by header to the right Pod, against the local cluster's real API server", () => {
  it("marks per-runtime HTTPRoutes and GRPCRoutes Accepted and ResolvedRefs for their generation, and the Gateway Programmed", async () => {
    for (const [plural, name] of [
      ["httproutes", "rt-aaa111"],
      ["httproutes", "rt-bbb222"],
      ["grpcroutes", "rt-aaa111-grpc"],
      ["grpcroutes", "rt-bbb222-grpc"],
    ] as const) {
      const c = await waitForRoute(
        custom,
        plural,
        ns,
        name,
        (x) => x.Accepted?.status === "True" && x.ResolvedRefs?.status === "True",
      );
      expect(c.Accepted).toEqual({ status: "True", reason: "Accepted", current: true });
      expect(c.ResolvedRefs).toEqual({ status: "True", reason: "ResolvedRefs", current: true });
    }
    expect(address).toMatch(/^127\.0\.\d+\.\d+$/);
  });

  it("sends an HTTP request with each routing header to that runtime's Pod, and one with an unknown header to none", async () => {
    for (const id of ["aaa111", "bbb222"]) {
      const res = await eventually(
        async () => {
          const r = await httpGet(`http://${address}:${HTTP_LISTENER_PORT}/queue`, { [ROUTING_HEADER]: id });
          return r.status === 200 ? r : undefined;
        },
        10_000,
        `route for ${id}`,
      );
      expect(res.body?.name).toBe(`rt-${id}`);
      expect(res.body?.path).toBe("/queue");
    }
    const stray = await httpGet(`http://${address}:${HTTP_LISTENER_PORT}/queue`, { [ROUTING_HEADER]: "ccc333" });
    expect(stray.status).toBe(404);
    expect(stray.body).toBeUndefined(); // the gateway answered, no Pod did
    expect((await httpGet(`http://${address}:${HTTP_LISTENER_PORT}/queue`)).status).toBe(404);
  });

  it("sends a gRPC call (h2c) with each routing header to that runtime's Pod with its status intact, and one with an unknown header to none", async () => {
    for (const id of ["aaa111", "bbb222"]) {
      const { answer, error } = await askOverGrpc(`${address}:${GRPC_LISTENER_PORT}`, id);
      expect(error).toBeUndefined();
      expect(answer?.name).toBe(`rt-${id}`);
    }
    const refused = await askOverGrpc(`${address}:${GRPC_LISTENER_PORT}`, "bbb222", "Refuse");
    expect(refused.error?.code).toBe(grpcStatus.FAILED_PRECONDITION); // the backend's status, carried in trailers
    expect(refused.error?.details).toBe("refused by rt-bbb222");
    const stray = await askOverGrpc(`${address}:${GRPC_LISTENER_PORT}`, "ccc333");
    expect(stray.answer).toBeUndefined();
    expect(stray.error?.code).toBe(grpcStatus.UNIMPLEMENTED); // HTTP 404 from the gateway, mapped by grpc-js
  });

  it("reports a route to a missing Service as ResolvedRefs=False/BackendNotFound and sends it no traffic", async () => {
    await custom.createNamespacedCustomObject({
      ...GW,
      plural: "httproutes",
      namespace: ns,
      body: httpRoute("rt-ghost", "ghost", "no-such-service"),
    });
    const c = await waitForRoute(custom, "httproutes", ns, "rt-ghost", (x) => x.ResolvedRefs !== undefined);
    expect(c.ResolvedRefs).toEqual({ status: "False", reason: "BackendNotFound", current: true });
    expect(c.Accepted?.status).toBe("True");
    const res = await httpGet(`http://${address}:${HTTP_LISTENER_PORT}/`, { [ROUTING_HEADER]: "ghost" });
    expect(res.status).toBe(500); // Gateway API: requests to an invalid backend get 500
    expect(res.body).toBeUndefined();
  });

  it("follows a route's new generation: observedGeneration catches up and traffic moves to the new backend", async () => {
    const patch = [{ op: "replace", path: "/spec/rules/0/backendRefs/0/name", value: "rt-bbb222" }];
    const updated = (await custom.patchNamespacedCustomObject(
      { ...GW, plural: "httproutes", namespace: ns, name: "rt-aaa111", body: patch },
      setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
    )) as { metadata: { generation: number } };
    expect(updated.metadata.generation).toBe(2);
    await waitForRoute(
      custom,
      "httproutes",
      ns,
      "rt-aaa111",
      (x) => x.ResolvedRefs?.current === true && x.Accepted?.current === true,
    );
    const res = await eventually(
      async () => {
        const r = await httpGet(`http://${address}:${HTTP_LISTENER_PORT}/`, { [ROUTING_HEADER]: "aaa111" });
        return r.body?.name === "rt-bbb222" ? r : undefined;
      },
      10_000,
      "re-pointed route",
    );
    expect(res.status).toBe(200);
  });

  it("stops sending traffic to a runtime's Pod once it is no longer Ready: the request gets 503", async () => {
    const pod = await core.readNamespacedPod({ name: "rt-bbb222", namespace: ns });
    await httpGet(`http://${pod.status?.podIP}:${APP_HTTP_PORT}/unready`);
    await waitForPod(kc, core, ns, "rt-bbb222", (p) => !isReady(p), 15_000);
    const res = await eventually(
      async () => {
        const r = await httpGet(`http://${address}:${HTTP_LISTENER_PORT}/`, { [ROUTING_HEADER]: "bbb222" });
        return r.status === 503 ? r : undefined;
      },
      5_000,
      "no ready endpoints",
    );
    expect(res.body).toBeUndefined();
  });
});
