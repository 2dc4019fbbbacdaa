import { ROUTING_HEADER } from "../../../contracts/index.ts";
import type { HostSpec } from "../types.ts";
import { runtimeMetadata, runtimeNames, RUNTIME_PORT, type RuntimePodOptions } from "./spec.ts";

export const GATEWAY_API = { group: "gateway.networking.k8s.io", version: "v1" } as const;

/** The shared Gateway every runtime route attaches to: one listener for HTTPRoutes, one (h2c) for GRPCRoutes. */
export interface SharedGateway {
  readonly name: string;
  readonly namespace: string;
  readonly className: string;
  readonly httpPort: number;
  readonly grpcPort: number;
}

/**
 * The shared Gateway object. GRPCRoutes get their own listener so HTTPRoute and GRPCRoute
 * hostnames never collide (infra-notes §5); both accept routes from every namespace because runtime
 * namespaces are configuration, not known to the Gateway's author.
 */
export function buildSharedGateway(gw: SharedGateway): Record<string, unknown> {
  return {
    apiVersion: `${GATEWAY_API.group}/${GATEWAY_API.version}`,
    kind: "Gateway",
    metadata: { name: gw.name, namespace: gw.namespace, labels: { "drover.dev/managed-by": "drover-control-plane" } },
    spec: {
      gatewayClassName: gw.className,
      listeners: [
        {
          name: "http",
          protocol: "HTTP",
          port: gw.httpPort,
          allowedRoutes: { namespaces: { from: "All" }, kinds: [{ kind: "HTTPRoute" }] },
        },
        {
          name: "grpc",
          protocol: "HTTP",
          port: gw.grpcPort,
          allowedRoutes: { namespaces: { from: "All" }, kinds: [{ kind: "GRPCRoute" }] },
        },
      ],
    },
  };
}

/**
 * The per-runtime route: HTTPRoute for HTTP runtimes, GRPCRoute for gRPC ones (not interchangeable:
 * a controller implementing one need not implement the other), matching the routing header exactly
 * and sending to this runtime's Service only.
 */
export function buildRuntimeRoute(
  spec: HostSpec,
  opts: RuntimePodOptions,
  gw: SharedGateway,
): { plural: "httproutes" | "grpcroutes"; kind: "HTTPRoute" | "GRPCRoute"; body: Record<string, unknown> } {
  const names = runtimeNames(opts.namePrefix ?? "drover-rt", spec.runtimeInstanceId);
  const header = { type: "Exact", name: ROUTING_HEADER, value: spec.runtimeInstanceId };
  const grpc = spec.transport === "grpc";
  const kind = grpc ? "GRPCRoute" : "HTTPRoute";
  const match = grpc ? { headers: [header] } : { headers: [header], path: { type: "PathPrefix", value: "/" } };
  return {
    plural: grpc ? "grpcroutes" : "httproutes",
    kind,
    body: {
      apiVersion: `${GATEWAY_API.group}/${GATEWAY_API.version}`,
      kind,
      metadata: { name: names.route, namespace: opts.namespace, ...runtimeMetadata(spec, opts.provider) },
      spec: {
        parentRefs: [{ name: gw.name, namespace: gw.namespace, sectionName: grpc ? "grpc" : "http" }],
        rules: [{ matches: [match], backendRefs: [{ name: names.service, port: RUNTIME_PORT[spec.transport] }] }],
      },
    },
  };
}

interface Condition {
  readonly type?: string;
  readonly status?: string;
  readonly reason?: string;
  readonly message?: string;
  readonly observedGeneration?: number;
}
interface RouteObject {
  readonly metadata?: { readonly generation?: number };
  readonly status?: {
    readonly parents?: readonly {
      readonly parentRef?: { readonly name?: string; readonly namespace?: string };
      readonly conditions?: readonly Condition[];
    }[];
  };
}
interface GatewayObject {
  readonly metadata?: { readonly generation?: number };
  readonly status?: {
    readonly conditions?: readonly Condition[];
    readonly addresses?: readonly { readonly value?: string }[];
  };
}

/**
 * Whether a route is usable through `gw` (infra-notes §5): its status entry for that Gateway has
 * `Accepted=True` and `ResolvedRefs=True`, both observed at the route's current generation.
 * `pending` while a condition is missing or stale; `refused` with the condition when one is False
 * for the current generation (a controller's verdict, not a delay).
 */
export function routeVerdict(
  route: RouteObject,
  gw: SharedGateway,
): { state: "ready" } | { state: "pending" | "refused"; detail: string } {
  const gen = route.metadata?.generation;
  const parent = route.status?.parents?.find(
    (p) => p.parentRef?.name === gw.name && (p.parentRef.namespace ?? gw.namespace) === gw.namespace,
  );
  for (const type of ["Accepted", "ResolvedRefs"]) {
    const c = parent?.conditions?.find((x) => x.type === type);
    if (!c || c.observedGeneration !== gen)
      return { state: "pending", detail: `${type} not yet observed at generation ${gen}` };
    if (c.status === "False") return { state: "refused", detail: `${type}=False (${c.reason}): ${c.message ?? ""}` };
    if (c.status !== "True") return { state: "pending", detail: `${type}=${c.status} (${c.reason})` };
  }
  return { state: "ready" };
}

/** The Gateway's address once it is `Programmed=True` at its current generation; undefined otherwise. */
export function programmedAddress(gateway: GatewayObject): string | undefined {
  const p = gateway.status?.conditions?.find((c) => c.type === "Programmed");
  if (p?.status !== "True" || p.observedGeneration !== gateway.metadata?.generation) return undefined;
  return gateway.status?.addresses?.[0]?.value;
}
