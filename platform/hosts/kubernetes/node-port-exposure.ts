import type { CoreV1Api, V1Service } from "@kubernetes/client-node";
import type { ErrorCode } from "../../../contracts/index.ts";
import type { HostSpec } from "../types.ts";
import { probeExposure } from "./exposure-probe.ts";
import { ensureObject } from "./resources.ts";
import { buildNodePortService, runtimeMetadata, runtimeNames, type RuntimePodOptions } from "./spec.ts";

export type NodePortExposure =
  | {
      readonly ok: true;
      readonly endpoint: string;
      readonly nodePort: number;
      readonly serviceUid: string;
      readonly created: boolean;
    }
  | {
      readonly ok: false;
      readonly code: ErrorCode;
      readonly detail: string;
      readonly serviceUid?: string;
      readonly created: boolean;
    };

/** `host:port`, bracketing an IPv6 address. */
export function nodePortAddress(nodeAddress: string, nodePort: number): string {
  return nodeAddress.includes(":") ? `[${nodeAddress}]:${nodePort}` : `${nodeAddress}:${nodePort}`;
}

/** The node port the API server allocated for the Service's (only) port; undefined when it has none. */
export function allocatedNodePort(svc: V1Service): number | undefined {
  const p = svc.spec?.type === "NodePort" ? svc.spec.ports?.[0]?.nodePort : undefined;
  return typeof p === "number" && p > 0 ? p : undefined;
}

/**
 * The `route` layer of `node-port` exposure, run once the exact Pod UID is Ready: creates (or adopts,
 * after the identity check) this runtime's `type: NodePort` Service, reads the node port the API
 * server allocated, and sends GetQueueStatus to `<nodeAddress>:<nodePort>` until this runtime answers.
 * Never throws. Reasons: `host-creation-failed` (the Service was refused), `host-identity-collision`
 * (a foreign Service has the name), `endpoint-resolution-failed` (no node port allocated),
 * `node-port-probe-identity-mismatch` (another runtime answered), `runtime-command-readiness-failed`
 * (nothing answered in time).
 */
export async function exposeThroughNodePort(
  core: CoreV1Api,
  spec: HostSpec,
  opts: RuntimePodOptions,
  nodeAddress: string,
  deadline: number,
  signal?: AbortSignal,
): Promise<NodePortExposure> {
  const ns = opts.namespace;
  const name = runtimeNames(opts.namePrefix ?? "drover-rt", spec.runtimeInstanceId).nodePort;
  const ensured = await ensureObject(
    `Service ${ns}/${name}`,
    runtimeMetadata(spec, opts.provider),
    () => core.createNamespacedService({ namespace: ns, body: buildNodePortService(spec, opts) }),
    () => core.readNamespacedService({ namespace: ns, name }),
  );
  if (ensured.kind === "failed") return { ok: false, code: ensured.code, detail: ensured.detail, created: false };
  const base = { serviceUid: ensured.uid, created: ensured.kind === "created" };
  // The API server allocates the node port synchronously on create; an adopted Service may predate a type change.
  const nodePort = allocatedNodePort(ensured.obj);
  if (nodePort === undefined)
    return {
      ok: false,
      code: "endpoint-resolution-failed",
      detail: `Service ${ns}/${name} (uid ${ensured.uid}) has no allocated nodePort (type ${ensured.obj.spec?.type ?? "?"})`,
      ...base,
    };
  const direct = nodePortAddress(nodeAddress, nodePort);
  const endpoint = spec.transport === "http" ? `http://${direct}` : direct;
  const probe = await probeExposure(
    endpoint,
    spec,
    deadline,
    `NodePort Service ${ns}/${name}`,
    "node-port-probe-identity-mismatch",
    signal,
  );
  if (probe) return { ok: false, ...probe, ...base };
  return { ok: true, endpoint, nodePort, ...base };
}
