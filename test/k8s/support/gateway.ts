import { Client, credentials, Metadata, type ServiceError } from "@grpc/grpc-js";
import type { CustomObjectsApi } from "@kubernetes/client-node";
import type { AppIdentity } from "./pod-app.ts";
import { eventually } from "./cluster-client.ts";

export const GW = { group: "gateway.networking.k8s.io", version: "v1" } as const;
export const ROUTING_HEADER = "x-drover-runtime-instance-id";

interface Cond {
  type: string;
  status: string;
  reason: string;
  observedGeneration?: number;
}
interface Obj {
  metadata: { generation?: number };
  status?: { conditions?: Cond[]; addresses?: { value: string }[]; parents?: { conditions?: Cond[] }[] };
}

/** The readiness rule of infra-notes §5: a route is usable when its parent entry says Accepted and ResolvedRefs for its current generation. */
export function routeConditions(route: Obj): Record<string, { status: string; reason: string; current: boolean }> {
  const out: Record<string, { status: string; reason: string; current: boolean }> = {};
  for (const c of route.status?.parents?.[0]?.conditions ?? []) {
    out[c.type] = { status: c.status, reason: c.reason, current: c.observedGeneration === route.metadata.generation };
  }
  return out;
}

/** Waits until the route's status for our Gateway satisfies `ok` (Accepted/ResolvedRefs for its current generation). */
export async function waitForRoute(
  custom: CustomObjectsApi,
  plural: "httproutes" | "grpcroutes",
  namespace: string,
  name: string,
  ok: (c: ReturnType<typeof routeConditions>) => boolean,
): Promise<ReturnType<typeof routeConditions>> {
  return eventually(
    async () => {
      const c = routeConditions((await custom.getNamespacedCustomObject({ ...GW, plural, namespace, name })) as Obj);
      return ok(c) ? c : undefined;
    },
    15_000,
    `${plural} ${namespace}/${name} status`,
  );
}

/** Waits until the Gateway is Programmed for its current generation; resolves its address. */
export async function waitForProgrammedGateway(
  custom: CustomObjectsApi,
  namespace: string,
  name: string,
): Promise<string> {
  return eventually(
    async () => {
      const gw = (await custom.getNamespacedCustomObject({ ...GW, plural: "gateways", namespace, name })) as Obj;
      const p = gw.status?.conditions?.find((c) => c.type === "Programmed");
      return p?.status === "True" && p.observedGeneration === gw.metadata.generation
        ? gw.status?.addresses?.[0]?.value
        : undefined;
    },
    15_000,
    `gateway ${namespace}/${name} Programmed`,
  );
}

/** Calls /drover.test.Who/<method> over h2c at `target` with the routing header; resolves the answer or the gRPC error. */
export function askOverGrpc(
  target: string,
  runtimeId: string,
  method: "Ask" | "Refuse" = "Ask",
): Promise<{ answer?: AppIdentity; error?: ServiceError }> {
  const client = new Client(target, credentials.createInsecure());
  const md = new Metadata();
  md.set(ROUTING_HEADER, runtimeId);
  const ser = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));
  const de = (b: Buffer): AppIdentity => JSON.parse(b.toString()) as AppIdentity;
  return new Promise((ok) => {
    client.makeUnaryRequest(
      `/drover.test.Who/${method}`,
      ser,
      de,
      {},
      md,
      { deadline: Date.now() + 5_000 },
      (error, answer) => {
        client.close();
        ok(error ? { error } : { answer });
      },
    );
  });
}
