import type { CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import type { ErrorCode } from "../../../contracts/index.ts";
import type { HostSpec } from "../types.ts";
import { apiFailure } from "./api-errors.ts";
import { probeExposure } from "./exposure-probe.ts";
import { ensureObject } from "./resources.ts";
import {
  buildRuntimeRoute,
  buildSharedGateway,
  GATEWAY_API,
  programmedAddress,
  routeVerdict,
  type SharedGateway,
} from "./routes.ts";
import { runtimeMetadata, type RuntimePodOptions } from "./spec.ts";
import { followObject } from "./watch-object.ts";

export type Exposure =
  | {
      readonly ok: true;
      readonly endpoint: string;
      readonly route: { kind: "HTTPRoute" | "GRPCRoute"; name: string; namespace: string };
      readonly routeUid?: string;
      readonly created: boolean;
    }
  | {
      readonly ok: false;
      readonly code: ErrorCode;
      readonly detail: string;
      readonly routeUid?: string;
      readonly created: boolean;
    };

/**
 * The `route` layer of the `gateway` exposure: ensures the shared Gateway (created if absent,
 * never owned by a runtime), creates or adopts (after the identity check) this runtime's
 * HTTPRoute/GRPCRoute once the Gateway is Programmed, waits for the route to be Accepted +
 * ResolvedRefs at its generation, then sends GetQueueStatus through the Gateway with the routing header until
 * this runtime answers. Never throws. Reasons: `gateway-not-ready` (CRDs missing, Gateway not
 * Programmed in time), `route-not-accepted` (refused, or not accepted in time),
 * `route-probe-identity-mismatch` (another runtime answered), `runtime-command-readiness-failed`
 * (nothing answered through the Gateway), `host-identity-collision` (a foreign route has the name).
 */
export async function exposeThroughGateway(
  kc: KubeConfig,
  custom: CustomObjectsApi,
  spec: HostSpec,
  opts: RuntimePodOptions,
  gw: SharedGateway,
  deadline: number,
  signal?: AbortSignal,
): Promise<Exposure> {
  const gwRef = { ...GATEWAY_API, namespace: gw.namespace, plural: "gateways" };
  try {
    await custom.getNamespacedCustomObject({ ...gwRef, name: gw.name });
  } catch (e) {
    const code = apiFailure(e)?.code;
    if (code !== 404)
      return {
        ok: false,
        code: "gateway-not-ready",
        detail: `read Gateway ${gw.namespace}/${gw.name}: ${String(e)}`,
        created: false,
      };
    try {
      await custom.createNamespacedCustomObject({ ...gwRef, body: buildSharedGateway(gw) });
    } catch (ce) {
      const f = apiFailure(ce);
      // 409: another start created it meanwhile; 404: the Gateway API CRDs are not installed.
      if (f?.code !== 409)
        return {
          ok: false,
          code: "gateway-not-ready",
          detail: `create Gateway ${gw.namespace}/${gw.name}: ${f?.message ?? String(ce)}`,
          created: false,
        };
    }
  }
  const follow = <R>(plural: string, ns: string, n: string, decide: (o: unknown) => R | undefined) =>
    followObject<unknown, R>(
      kc,
      {
        path: `/apis/${GATEWAY_API.group}/${GATEWAY_API.version}/namespaces/${ns}/${plural}`,
        name: n,
        list: (fieldSelector) =>
          custom.listNamespacedCustomObject({ ...GATEWAY_API, namespace: ns, plural, fieldSelector }) as Promise<{
            items: unknown[];
          }>,
      },
      (e) => (e.obj === undefined || e.type === "DELETED" ? undefined : decide(e.obj)),
      deadline,
      signal,
    );
  // The Gateway first: a missing controller is `gateway-not-ready`, not a route that never gets a status.
  const address = await follow("gateways", gw.namespace, gw.name, (o) =>
    programmedAddress(o as Parameters<typeof programmedAddress>[0]),
  );
  if (typeof address !== "string")
    return {
      ok: false,
      code: "gateway-not-ready",
      detail: `Gateway ${gw.namespace}/${gw.name} not Programmed in time (is its controller running?)`,
      created: false,
    };
  const route = buildRuntimeRoute(spec, opts, gw);
  const name = (route.body.metadata as { name: string }).name;
  const routeRef = { ...GATEWAY_API, namespace: opts.namespace, plural: route.plural };
  const ensured = await ensureObject<{ metadata?: { uid?: string } }>(
    `${route.kind} ${opts.namespace}/${name}`,
    runtimeMetadata(spec, opts.provider),
    () => custom.createNamespacedCustomObject({ ...routeRef, body: route.body }),
    () => custom.getNamespacedCustomObject({ ...routeRef, name }),
    "gateway-not-ready",
  );
  if (ensured.kind === "failed") return { ok: false, code: ensured.code, detail: ensured.detail, created: false };
  const base = { routeUid: ensured.uid, created: ensured.kind === "created" };
  let last = "no status yet";
  const accepted = await follow(route.plural, opts.namespace, name, (o) => {
    const v = routeVerdict(o as Parameters<typeof routeVerdict>[0], gw);
    if (v.state === "pending") {
      last = v.detail;
      return undefined;
    }
    return v;
  });
  if ("timeout" in accepted)
    return {
      ok: false,
      code: "route-not-accepted",
      detail: `${route.kind} ${name} not accepted in time: ${last}`,
      ...base,
    };
  if (accepted.state !== "ready")
    return { ok: false, code: "route-not-accepted", detail: `${route.kind} ${name}: ${accepted.detail}`, ...base };
  const port = spec.transport === "grpc" ? gw.grpcPort : gw.httpPort;
  const endpoint = spec.transport === "http" ? `http://${address}:${port}` : `${address}:${port}`;
  const probe = await probeExposure(endpoint, spec, deadline, "the Gateway", "route-probe-identity-mismatch", signal);
  if (probe) return { ok: false, ...probe, ...base };
  return { ok: true, endpoint, route: { kind: route.kind, name, namespace: opts.namespace }, ...base };
}
