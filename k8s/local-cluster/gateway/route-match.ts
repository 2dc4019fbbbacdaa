import type { HeaderMatch } from "./api-types.ts";
import type { RouteEntry } from "./plan.ts";

/** The parts of a request that routing looks at. Header names lower-case. */
export interface RequestFacts {
  readonly method: string;
  readonly path: string;
  readonly host: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** content-type application/grpc* over HTTP/2: GRPCRoutes are tried first. */
  readonly grpc: boolean;
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

function headersMatch(want: readonly HeaderMatch[] | undefined, got: RequestFacts["headers"]): boolean {
  return (want ?? []).every((h) => {
    const v = first(got[h.name.toLowerCase()]);
    if (v === undefined) return false;
    return (h.type ?? "Exact") === "Exact" ? v === h.value : new RegExp(`^(?:${h.value})$`).test(v);
  });
}

function hostMatches(hostnames: readonly string[], host: string): boolean {
  if (hostnames.length === 0) return true;
  const h = host.replace(/:\d+$/, "").toLowerCase();
  return hostnames.some((n) =>
    n.startsWith("*.") ? h.endsWith(n.slice(1)) && h.length > n.length - 1 : h === n.toLowerCase(),
  );
}

function pathMatches(type: string, value: string, path: string): boolean {
  const p = path.split("?")[0] ?? "/";
  if (type === "Exact") return p === value;
  if (type === "RegularExpression") return new RegExp(`^(?:${value})$`).test(p);
  // PathPrefix matches whole segments: /abc matches /abc and /abc/x, not /abcd.
  const v = value.endsWith("/") && value !== "/" ? value.slice(0, -1) : value;
  return v === "/" || p === v || p.startsWith(`${v}/`);
}

function queryMatches(want: readonly HeaderMatch[] | undefined, path: string): boolean {
  if (!want?.length) return true;
  const q = new URLSearchParams(path.split("?")[1] ?? "");
  return want.every((m) => {
    const v = q.get(m.name);
    return v !== null && ((m.type ?? "Exact") === "Exact" ? v === m.value : new RegExp(`^(?:${m.value})$`).test(v));
  });
}

function matches(e: RouteEntry, r: RequestFacts): boolean {
  if (!hostMatches(e.hostnames, r.host)) return false;
  if (e.grpc) {
    const [, service = "", method = ""] = r.path.split("?")[0]?.split("/") ?? [];
    const m = e.grpc.method;
    const re = (m?.type ?? "Exact") === "RegularExpression";
    const eq = (want: string | undefined, got: string): boolean =>
      want === undefined || (re ? new RegExp(`^(?:${want})$`).test(got) : want === got);
    return r.grpc && eq(m?.service, service) && eq(m?.method, method) && headersMatch(e.grpc.headers, r.headers);
  }
  const m = e.http ?? {};
  return (
    pathMatches(m.path?.type ?? "PathPrefix", m.path?.value ?? "/", r.path) &&
    (m.method === undefined || m.method === r.method) &&
    headersMatch(m.headers, r.headers) &&
    queryMatches(m.queryParams, r.path)
  );
}

// Gateway API precedence (httproute_types.go / grpcroute_types.go): exact path, longest prefix,
// method, most header matches, most query matches, oldest route, then namespace/name.
function rank(e: RouteEntry): (number | string)[] {
  if (e.grpc) {
    const m = e.grpc.method;
    return [
      0,
      -(m?.service?.length ?? 0),
      -(m?.method?.length ?? 0),
      -(e.grpc.headers?.length ?? 0),
      e.created,
      e.route,
      e.rule,
    ];
  }
  const m = e.http ?? {};
  const type = m.path?.type ?? "PathPrefix";
  return [
    type === "Exact" ? 0 : 1,
    -(m.path?.value?.length ?? 1),
    m.method ? 0 : 1,
    -(m.headers?.length ?? 0),
    -(m.queryParams?.length ?? 0),
    e.created,
    e.route,
    e.rule,
  ];
}

function compare(a: (number | string)[], b: (number | string)[]): number {
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number | string;
    const y = b[i] as number | string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/**
 * Chooses the route rule a request goes to among the entries served on one address:port, or
 * undefined (→ 404). gRPC requests try GRPCRoutes before HTTPRoutes; other requests only
 * HTTPRoutes. Ties follow the Gateway API precedence rules.
 */
export function selectRoute(entries: readonly RouteEntry[], r: RequestFacts): RouteEntry | undefined {
  const pick = (kind: RouteEntry["kind"]): RouteEntry | undefined =>
    entries.filter((e) => e.kind === kind && matches(e, r)).sort((a, b) => compare(rank(a), rank(b)))[0];
  return (r.grpc ? pick("GRPCRoute") : undefined) ?? pick("HTTPRoute");
}
