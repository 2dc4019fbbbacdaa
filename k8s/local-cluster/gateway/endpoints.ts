import type { V1Pod, V1Service } from "@kubernetes/client-node";

/** A ready Pod address for a Service port. */
export interface Endpoint {
  readonly ip: string;
  readonly port: number;
  readonly pod: string;
  /** The Service port's appProtocol says the backend speaks HTTP/2 in cleartext (`kubernetes.io/h2c`). */
  readonly h2c: boolean;
}

const isReady = (p: V1Pod): boolean =>
  !p.metadata?.deletionTimestamp &&
  !!p.status?.podIP &&
  p.status?.phase === "Running" &&
  (p.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");

/**
 * What an EndpointSlice controller would publish, computed directly (this cluster runs no
 * controller-manager): the Pods in the Service's namespace that match its selector and are Ready,
 * with the Service port's targetPort resolved (a number, or a container port name looked up in
 * each Pod). `port` picks the Service port (default: its first). A Service without a selector has
 * no endpoints here.
 */
export function readyEndpoints(svc: V1Service, port: number | undefined, pods: readonly V1Pod[]): Endpoint[] {
  const sel = svc.spec?.selector;
  const sp = port === undefined ? svc.spec?.ports?.[0] : svc.spec?.ports?.find((p) => p.port === port);
  if (!sel || Object.keys(sel).length === 0 || !sp) return [];
  const ns = svc.metadata?.namespace;
  const out: Endpoint[] = [];
  for (const p of pods) {
    if (p.metadata?.namespace !== ns || !isReady(p)) continue;
    const labels = p.metadata?.labels ?? {};
    if (!Object.entries(sel).every(([k, v]) => labels[k] === v)) continue;
    const target = sp.targetPort ?? sp.port;
    const n =
      typeof target === "number"
        ? target
        : /^\d+$/.test(String(target))
          ? Number(target)
          : p.spec?.containers.flatMap((c) => c.ports ?? []).find((cp) => cp.name === target)?.containerPort;
    if (n !== undefined)
      out.push({
        ip: p.status?.podIP as string,
        port: n,
        pod: `${ns}/${p.metadata?.name}`,
        h2c: sp.appProtocol === "kubernetes.io/h2c",
      });
  }
  return out;
}
