import { describe, expect, it } from "vitest";
import type { RouteEntry } from "./plan.ts";
import { selectRoute, type RequestFacts } from "./route-match.ts";

const entry = (route: string, extra: Partial<RouteEntry>): RouteEntry => ({
  kind: "HTTPRoute",
  route,
  created: 0,
  rule: 0,
  hostnames: [],
  backends: [{ namespace: "n", service: route, weight: 1 }],
  refsOk: true,
  ...extra,
});
const req = (headers: Record<string, string>, extra: Partial<RequestFacts> = {}): RequestFacts => ({
  method: "GET",
  path: "/x",
  host: "gw",
  headers,
  grpc: false,
  ...extra,
});
const H = "x-drover-runtime-instance-id";

describe("local gateway route selection (pure, proves no transport)", () => {
  const perRuntime = [
    entry("n/rt-a", { http: { headers: [{ name: "X-Drover-Runtime-Instance-Id", value: "a" }] } }),
    entry("n/rt-b", { http: { headers: [{ name: H, value: "b" }] } }),
  ];

  it("matches the routing header exactly and case-insensitively by name", () => {
    expect(selectRoute(perRuntime, req({ [H]: "a" }))?.route).toBe("n/rt-a");
    expect(selectRoute(perRuntime, req({ [H]: "b" }))?.route).toBe("n/rt-b");
    expect(selectRoute(perRuntime, req({ [H]: "ab" }))).toBeUndefined();
    expect(selectRoute(perRuntime, req({}))).toBeUndefined();
  });

  it("never lets a catch-all route steal traffic from a route with more header matches", () => {
    const all = [entry("n/catch-all", { created: -1 }), ...perRuntime];
    expect(selectRoute(all, req({ [H]: "b" }))?.route).toBe("n/rt-b");
    expect(selectRoute(all, req({ [H]: "zzz" }))?.route).toBe("n/catch-all");
  });

  it("matches PathPrefix by whole segments", () => {
    const r = [entry("n/api", { http: { path: { type: "PathPrefix", value: "/api" } } })];
    expect(selectRoute(r, req({}, { path: "/api/v1?q=1" }))?.route).toBe("n/api");
    expect(selectRoute(r, req({}, { path: "/apix" }))).toBeUndefined();
  });

  it("tries GRPCRoutes for gRPC requests, by service/method and header", () => {
    const g = entry("n/rt-a-grpc", {
      kind: "GRPCRoute",
      grpc: { method: { service: "cp.v1.Runtime" }, headers: [{ name: H, value: "a" }] },
    });
    expect(selectRoute([g], req({ [H]: "a" }, { grpc: true, path: "/cp.v1.Runtime/GetQueueStatus" }))?.route).toBe(
      "n/rt-a-grpc",
    );
    expect(selectRoute([g], req({ [H]: "a" }, { grpc: true, path: "/other.Svc/Call" }))).toBeUndefined();
    expect(selectRoute([g], req({ [H]: "a" }, { grpc: false, path: "/cp.v1.Runtime/GetQueueStatus" }))).toBeUndefined();
  });
});
