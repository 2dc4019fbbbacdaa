import type { V1Namespace, V1Service } from "@kubernetes/client-node";
import { GROUP, type BackendRef, type Gateway, type Listener, type ParentRef, type RouteKind } from "./api-types.ts";
import { selectorMatches } from "./conditions.ts";

export interface Verdict {
  readonly ok: boolean;
  readonly reason: string;
  readonly message: string;
}

/** The route kinds a listener accepts: its allowedRoutes.kinds, else both kinds this gateway serves (HTTP listeners only). */
export function listenerKinds(l: Listener): RouteKind[] {
  if (l.protocol !== "HTTP") return [];
  const wanted = l.allowedRoutes?.kinds;
  if (!wanted?.length) return ["HTTPRoute", "GRPCRoute"];
  return wanted
    .filter((k) => (k.group ?? GROUP) === GROUP && (k.kind === "HTTPRoute" || k.kind === "GRPCRoute"))
    .map((k) => k.kind as RouteKind);
}

function namespaceAllowed(
  l: Listener,
  gatewayNs: string,
  routeNs: string,
  namespaces: readonly V1Namespace[],
): boolean {
  const from = l.allowedRoutes?.namespaces?.from ?? "Same";
  if (from === "All") return true;
  if (from === "Same") return routeNs === gatewayNs;
  const ns = namespaces.find((n) => n.metadata?.name === routeNs);
  return ns !== undefined && selectorMatches(l.allowedRoutes?.namespaces?.selector, ns.metadata?.labels);
}

/**
 * Decides whether a route (kind, namespace) attaches to a Gateway through one parentRef, per the
 * Gateway API rules: the ref's sectionName and port narrow the listeners; a listener admits the
 * route if its allowedRoutes kinds and namespaces do. Returns the admitting listeners and the
 * Accepted verdict (NoMatchingParent / NotAllowedByListeners when none).
 */
export function attach(
  gw: Gateway,
  ref: ParentRef,
  kind: RouteKind,
  routeNs: string,
  namespaces: readonly V1Namespace[],
): { verdict: Verdict; listeners: Listener[] } {
  const gwNs = gw.metadata.namespace ?? "default";
  const candidates = gw.spec.listeners.filter(
    (l) =>
      (ref.sectionName === undefined || l.name === ref.sectionName) && (ref.port === undefined || l.port === ref.port),
  );
  if (candidates.length === 0) {
    return {
      verdict: {
        ok: false,
        reason: "NoMatchingParent",
        message: `no listener named ${ref.sectionName ?? "*"} on port ${ref.port ?? "*"}`,
      },
      listeners: [],
    };
  }
  const admitting = candidates.filter(
    (l) => listenerKinds(l).includes(kind) && namespaceAllowed(l, gwNs, routeNs, namespaces),
  );
  if (admitting.length === 0) {
    return {
      verdict: {
        ok: false,
        reason: "NotAllowedByListeners",
        message: `no listener allows ${kind} from namespace ${routeNs}`,
      },
      listeners: [],
    };
  }
  return {
    verdict: {
      ok: true,
      reason: "Accepted",
      message: `accepted by listener(s) ${admitting.map((l) => l.name).join(", ")}`,
    },
    listeners: admitting,
  };
}

/** True when a parentRef names this Gateway (group/kind default to Gateway API's Gateway, namespace to the route's). */
export function refersTo(ref: ParentRef, gw: Gateway, routeNs: string): boolean {
  return (
    (ref.group ?? GROUP) === GROUP &&
    (ref.kind ?? "Gateway") === "Gateway" &&
    ref.name === gw.metadata.name &&
    (ref.namespace ?? routeNs) === (gw.metadata.namespace ?? "default")
  );
}

/**
 * ResolvedRefs for a route's backendRefs: each must be a core Service in the route's namespace
 * (ReferenceGrant is not implemented, so cross-namespace refs are RefNotPermitted) that exists and
 * has the referenced port. The first failure decides the reason (InvalidKind, RefNotPermitted,
 * BackendNotFound).
 */
export function resolveRefs(refs: readonly BackendRef[], routeNs: string, services: readonly V1Service[]): Verdict {
  for (const r of refs) {
    if ((r.group ?? "") !== "" || (r.kind ?? "Service") !== "Service")
      return { ok: false, reason: "InvalidKind", message: `backendRef ${r.name}: only core Services are supported` };
    if ((r.namespace ?? routeNs) !== routeNs)
      return {
        ok: false,
        reason: "RefNotPermitted",
        message: `backendRef ${r.namespace}/${r.name}: cross-namespace references need a ReferenceGrant, which the local gateway does not implement`,
      };
    const svc = services.find((s) => s.metadata?.namespace === routeNs && s.metadata?.name === r.name);
    if (!svc) return { ok: false, reason: "BackendNotFound", message: `Service ${routeNs}/${r.name} not found` };
    if (r.port !== undefined && !svc.spec?.ports?.some((p) => p.port === r.port)) {
      return { ok: false, reason: "BackendNotFound", message: `Service ${routeNs}/${r.name} has no port ${r.port}` };
    }
  }
  return { ok: true, reason: "ResolvedRefs", message: "all backend references resolved" };
}
