import { describe, expect, it } from "vitest";
import type { V1Namespace, V1Service } from "@kubernetes/client-node";
import type { Gateway, HttpRoute } from "./api-types.ts";
import { plan, type Snapshot } from "./plan.ts";

const gateway: Gateway = {
  metadata: { name: "shared", namespace: "infra", generation: 3 },
  spec: {
    gatewayClassName: "local",
    listeners: [
      {
        name: "http",
        protocol: "HTTP",
        port: 8080,
        allowedRoutes: { namespaces: { from: "Selector", selector: { matchLabels: { "cp/runtimes": "true" } } } },
      },
      {
        name: "grpc",
        protocol: "HTTP",
        port: 8081,
        allowedRoutes: { namespaces: { from: "All" }, kinds: [{ kind: "GRPCRoute" }] },
      },
    ],
  },
};
const route = (ns: string, backend: string, sectionName = "http"): HttpRoute => ({
  metadata: { name: "rt", namespace: ns, generation: 2 },
  spec: {
    parentRefs: [{ name: "shared", namespace: "infra", sectionName }],
    rules: [{ backendRefs: [{ name: backend, port: 80 }] }],
  },
});
const ns = (name: string, labels: Record<string, string> = {}): V1Namespace => ({ metadata: { name, labels } });
const svc: V1Service = { metadata: { name: "rt-svc", namespace: "runtimes" }, spec: { ports: [{ port: 80 }] } };
const snap = (routes: HttpRoute[]): Snapshot => ({
  controllerName: "me",
  classes: [{ metadata: { name: "local" }, spec: { controllerName: "me" } }],
  gateways: [gateway],
  httpRoutes: routes,
  grpcRoutes: [],
  services: [svc],
  namespaces: [ns("runtimes", { "cp/runtimes": "true" }), ns("other")],
  addresses: new Map([["infra/shared", "127.0.7.1"]]),
  bound: new Map([
    ["127.0.7.1:8080", true],
    ["127.0.7.1:8081", true],
  ]),
  now: "2026-01-01T00:00:00Z",
});
const conds = (p: ReturnType<typeof plan>, key: string) =>
  Object.fromEntries(
    (p.routeParents.get(key)?.[0]?.conditions ?? []).map((c) => [c.type, [c.status, c.reason, c.observedGeneration]]),
  );

describe("local gateway reconciliation (pure, proves no transport)", () => {
  it("accepts a route from a namespace the listener's selector admits and resolves its Service", () => {
    const p = plan(snap([route("runtimes", "rt-svc")]));
    expect(conds(p, "HTTPRoute/runtimes/rt")).toEqual({
      Accepted: ["True", "Accepted", 2],
      ResolvedRefs: ["True", "ResolvedRefs", 2],
    });
    expect(p.bindings.get("127.0.7.1:8080")?.entries.map((e) => e.route)).toEqual(["runtimes/rt"]);
    const gw = p.gatewayStatus.get("infra/shared") as {
      conditions: { type: string; status: string; observedGeneration: number }[];
    };
    expect(gw.conditions.find((c) => c.type === "Programmed")).toMatchObject({ status: "True", observedGeneration: 3 });
  });

  it("refuses a route from a namespace the selector does not admit, or an HTTPRoute on a GRPCRoute-only listener", () => {
    expect(conds(plan(snap([route("other", "rt-svc")])), "HTTPRoute/other/rt").Accepted).toEqual([
      "False",
      "NotAllowedByListeners",
      2,
    ]);
    expect(conds(plan(snap([route("runtimes", "rt-svc", "grpc")])), "HTTPRoute/runtimes/rt").Accepted).toEqual([
      "False",
      "NotAllowedByListeners",
      2,
    ]);
  });

  it("reports a missing backend Service as ResolvedRefs=False/BackendNotFound and compiles its rule as unresolved", () => {
    const p = plan(snap([route("runtimes", "gone")]));
    expect(conds(p, "HTTPRoute/runtimes/rt").ResolvedRefs).toEqual(["False", "BackendNotFound", 2]);
    expect(p.bindings.get("127.0.7.1:8080")?.entries[0]?.refsOk).toBe(false);
  });
});
