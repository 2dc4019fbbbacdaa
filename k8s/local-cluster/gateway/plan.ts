import type { V1Namespace, V1Service } from "@kubernetes/client-node";
import {
  GROUP,
  type BackendRef,
  type Condition,
  type Gateway,
  type GatewayClass,
  type GrpcRoute,
  type GrpcRouteMatch,
  type HttpRoute,
  type HttpRouteMatch,
  type RouteKind,
  type RouteParentStatus,
} from "./api-types.ts";
import { attach, listenerKinds, refersTo, resolveRefs } from "./attachment.ts";
import { condition } from "./conditions.ts";

/** Everything the gateway reads from the API, plus the data plane's bind results. Input to {@link plan}. */
export interface Snapshot {
  readonly controllerName: string;
  readonly classes: readonly GatewayClass[];
  readonly gateways: readonly Gateway[];
  readonly httpRoutes: readonly HttpRoute[];
  readonly grpcRoutes: readonly GrpcRoute[];
  readonly services: readonly V1Service[];
  readonly namespaces: readonly V1Namespace[];
  /** Address assigned to each of our Gateways (`ns/name` → IP). */
  readonly addresses: ReadonlyMap<string, string>;
  /** Bind result per `ip:port`: true, or the error message. Missing = not attempted yet. */
  readonly bound: ReadonlyMap<string, true | string>;
  readonly now: string;
}

/** One rule match, compiled for the data plane. Backends with `ok: false` answer 500 (Gateway API). */
export interface RouteEntry {
  readonly kind: RouteKind;
  readonly route: string;
  readonly created: number;
  readonly rule: number;
  readonly hostnames: readonly string[];
  readonly http?: HttpRouteMatch;
  readonly grpc?: GrpcRouteMatch;
  readonly backends: readonly {
    readonly namespace: string;
    readonly service: string;
    readonly port?: number;
    readonly weight: number;
  }[];
  readonly refsOk: boolean;
}

export interface Plan {
  /** What to serve: `ip:port` → the route entries attached to that Gateway's listeners on that port. */
  readonly bindings: ReadonlyMap<
    string,
    { readonly ip: string; readonly port: number; readonly entries: readonly RouteEntry[] }
  >;
  readonly classStatus: ReadonlyMap<string, { conditions: Condition[] }>;
  readonly gatewayStatus: ReadonlyMap<string, Record<string, unknown>>;
  /** Full `status.parents` to write per `Kind/ns/name` (entries of other controllers kept). */
  readonly routeParents: ReadonlyMap<string, RouteParentStatus[]>;
}

const keyOf = (m: { name: string; namespace?: string }): string => `${m.namespace ?? "default"}/${m.name}`;
const gen = (m: { generation?: number }): number => m.generation ?? 0;

/** The Gateways whose GatewayClass names our controller. */
export function ourGateways(s: Pick<Snapshot, "classes" | "gateways" | "controllerName">): Gateway[] {
  const ours = new Set(s.classes.filter((c) => c.spec.controllerName === s.controllerName).map((c) => c.metadata.name));
  return s.gateways.filter((g) => ours.has(g.spec.gatewayClassName));
}

/**
 * Pure reconciliation: from a snapshot, computes the data plane (which address:port serves which
 * route matches) and every status this controller owns — GatewayClass Accepted, Gateway
 * Accepted/Programmed with per-listener conditions and attachedRoutes, route parents'
 * Accepted/ResolvedRefs — all with observedGeneration.
 */
export function plan(s: Snapshot): Plan {
  const now = s.now;
  const classStatus = new Map<string, { conditions: Condition[] }>();
  for (const c of s.classes.filter((c) => c.spec.controllerName === s.controllerName)) {
    classStatus.set(c.metadata.name, {
      conditions: [
        condition(
          c.status?.conditions,
          "Accepted",
          true,
          "Accepted",
          "handled by drover's local gateway",
          gen(c.metadata),
          now,
        ),
      ],
    });
  }
  const gateways = ourGateways(s);
  const attached = new Map<string, number>(); // `gw/listener` → attached route count
  const bindings = new Map<string, { ip: string; port: number; entries: RouteEntry[] }>();
  const routeParents = new Map<string, RouteParentStatus[]>();

  const routes: { kind: RouteKind; r: HttpRoute | GrpcRoute }[] = [
    ...s.httpRoutes.map((r) => ({ kind: "HTTPRoute" as const, r })),
    ...s.grpcRoutes.map((r) => ({ kind: "GRPCRoute" as const, r })),
  ];
  for (const { kind, r } of routes) {
    const ns = r.metadata.namespace ?? "default";
    const refs: BackendRef[] = (r.spec.rules ?? []).flatMap((rule) => rule.backendRefs ?? []);
    const resolved = resolveRefs(refs, ns, s.services);
    const ours: RouteParentStatus[] = [];
    for (const ref of r.spec.parentRefs ?? []) {
      const gw = gateways.find((g) => refersTo(ref, g, ns));
      if (!gw) continue; // not a Gateway this controller serves: not ours to report on
      const { verdict, listeners } = attach(gw, ref, kind, ns, s.namespaces);
      const prev = r.status?.parents?.find(
        (p) => p.controllerName === s.controllerName && JSON.stringify(p.parentRef) === JSON.stringify(ref),
      )?.conditions;
      ours.push({
        parentRef: ref,
        controllerName: s.controllerName,
        conditions: [
          condition(prev, "Accepted", verdict.ok, verdict.reason, verdict.message, gen(r.metadata), now),
          condition(prev, "ResolvedRefs", resolved.ok, resolved.reason, resolved.message, gen(r.metadata), now),
        ],
      });
      const ip = s.addresses.get(keyOf(gw.metadata));
      for (const l of listeners) {
        const lk = `${keyOf(gw.metadata)}/${l.name}`;
        attached.set(lk, (attached.get(lk) ?? 0) + 1);
        if (!ip) continue;
        const b = bindings.get(`${ip}:${l.port}`) ?? { ip, port: l.port, entries: [] };
        bindings.set(`${ip}:${l.port}`, b);
        b.entries.push(...entriesOf(kind, r, resolved.ok));
      }
    }
    const others = (r.status?.parents ?? []).filter((p) => p.controllerName !== s.controllerName);
    if (ours.length > 0 || (r.status?.parents ?? []).length !== others.length)
      routeParents.set(`${kind}/${keyOf(r.metadata)}`, [...others, ...ours]);
  }

  const gatewayStatus = new Map<string, Record<string, unknown>>();
  for (const gw of gateways) {
    const g = gen(gw.metadata);
    const ip = s.addresses.get(keyOf(gw.metadata));
    const prev = gw.status;
    const listeners = gw.spec.listeners.map((l) => {
      const kinds = listenerKinds(l);
      const bound = ip ? s.bound.get(`${ip}:${l.port}`) : undefined;
      const pc = prev?.listeners?.find((x) => x.name === l.name)?.conditions;
      const supported = l.protocol === "HTTP";
      if (ip && supported && !bindings.has(`${ip}:${l.port}`))
        bindings.set(`${ip}:${l.port}`, { ip, port: l.port, entries: [] });
      return {
        name: l.name,
        supportedKinds: kinds.map((kind) => ({ group: GROUP, kind })),
        attachedRoutes: attached.get(`${keyOf(gw.metadata)}/${l.name}`) ?? 0,
        conditions: [
          condition(
            pc,
            "Accepted",
            supported,
            supported ? "Accepted" : "UnsupportedProtocol",
            supported ? "listener accepted" : `protocol ${l.protocol} is not served (HTTP only: HTTP/1.1 and h2c)`,
            g,
            now,
          ),
          condition(
            pc,
            "Programmed",
            bound === true,
            bound === true ? "Programmed" : supported ? (bound === undefined ? "Pending" : "Invalid") : "Invalid",
            bound === true
              ? `serving on ${ip}:${l.port}`
              : typeof bound === "string"
                ? `cannot listen on ${ip}:${l.port}: ${bound}`
                : "not bound yet",
            g,
            now,
          ),
          condition(
            pc,
            "ResolvedRefs",
            kinds.length > 0 || !supported,
            kinds.length > 0 || !supported ? "ResolvedRefs" : "InvalidRouteKinds",
            "route kinds resolved",
            g,
            now,
          ),
          condition(pc, "Conflicted", false, "NoConflicts", "no conflicts", g, now),
        ],
      };
    });
    const programmed =
      ip !== undefined && listeners.every((l) => l.conditions.find((c) => c.type === "Programmed")?.status === "True");
    gatewayStatus.set(keyOf(gw.metadata), {
      ...(ip ? { addresses: [{ type: "IPAddress", value: ip }] } : {}),
      conditions: [
        condition(prev?.conditions, "Accepted", true, "Accepted", "accepted by drover's local gateway", g, now),
        condition(
          prev?.conditions,
          "Programmed",
          programmed,
          programmed ? "Programmed" : ip ? "Pending" : "AddressNotAssigned",
          programmed ? `serving on ${ip}` : "not every listener is serving yet",
          g,
          now,
        ),
      ],
      listeners,
    });
  }
  return { bindings, classStatus, gatewayStatus, routeParents };
}

function entriesOf(kind: RouteKind, r: HttpRoute | GrpcRoute, refsOk: boolean): RouteEntry[] {
  const ns = r.metadata.namespace ?? "default";
  const created = r.metadata.creationTimestamp ? new Date(r.metadata.creationTimestamp).getTime() : 0;
  return (r.spec.rules ?? []).flatMap((rule, i) => {
    const backends = (rule.backendRefs ?? []).map((b) => ({
      namespace: b.namespace ?? ns,
      service: b.name,
      ...(b.port !== undefined ? { port: b.port } : {}),
      weight: b.weight ?? 1,
    }));
    const matches: (HttpRouteMatch | GrpcRouteMatch)[] = rule.matches?.length ? rule.matches : [{}];
    return matches.map((m) => ({
      kind,
      route: `${ns}/${r.metadata.name}`,
      created,
      rule: i,
      hostnames: r.spec.hostnames ?? [],
      ...(kind === "HTTPRoute" ? { http: m as HttpRouteMatch } : { grpc: m as GrpcRouteMatch }),
      backends,
      refsOk,
    }));
  });
}
