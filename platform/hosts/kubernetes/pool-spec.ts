import type { V1EnvVar, V1Pod, V1Secret } from "@kubernetes/client-node";
import type { HostSpec } from "../types.ts";
import { labelValue } from "./names.ts";
import {
  buildRuntimePod,
  L,
  MANAGED_BY,
  NATS_CA_DIR,
  RUNTIME_OPS_PORT,
  RUNTIME_PORT,
  runtimeNames,
  type RuntimePodOptions,
} from "./spec.ts";

// Type-only SDK imports: the objects built here are plain JSON; the SDK itself stays in strategy.ts.

/** Label of a warm pool member's Pod and Secret (its value: the pool's name). */
export const POOL_LABEL = "drover.dev/warm-pool";
/**
 * Annotation set on a member's Pod when it is bound: the RuntimeInstanceId its host now belongs to
 * (pod-observer.ts reports the Pod's facts under it). A record for observers, never an authority:
 * the binding itself travels over the bind channel, authenticated by the member's token.
 */
export const BOUND_TO = "drover.dev/bound-runtime-instance-id";
const POOL_TOKEN_KEY = "pool-token";

/** A member's Pod runs with this CPU limit (a Pod cannot be resized when bound): the most workers a binding may ask for. */
export const DEFAULT_POOL_CPU_LIMIT = 2;

/** Labels and annotations of a member: control plane, member id, pool; no tenant, no identity key. */
export function poolMetadata(
  memberId: string,
  controlPlaneId: string,
  provider = "drover-runtime",
): { labels: Record<string, string>; annotations: Record<string, string> } {
  const full: Record<string, string> = {
    [L.controlPlane]: controlPlaneId,
    [L.runtime]: memberId,
    [L.provider]: provider,
    [L.hostProvider]: "kubernetes",
    [L.managedBy]: MANAGED_BY,
    [POOL_LABEL]: "default",
  };
  return { labels: Object.fromEntries(Object.entries(full).map(([k, v]) => [k, labelValue(v)])), annotations: full };
}

/**
 * A warm pool member's Pod: the runtime image in pooled mode. It holds no identity, tenant, sizing,
 * transport, command token, NATS credential or tenant Secret: only DROVER_POOL_TOKEN (from the
 * member's own Secret, owned by the Pod) and its bind listener on the ops port, which answers the
 * readiness probe (`/readyz`) until the binding and then gives the port to the bound runtime's ops
 * listener. Same image, security context, requests and volumes as a cold runtime Pod.
 */
export function buildPoolMemberPod(
  memberId: string,
  controlPlaneId: string,
  opts: RuntimePodOptions & { readonly poolCpuLimit?: number },
): V1Pod {
  const neutral: HostSpec = {
    controlPlaneId,
    runtimeInstanceId: memberId,
    isolationMode: "shared",
    transport: "http",
    sizing: {
      workers: opts.poolCpuLimit ?? DEFAULT_POOL_CPU_LIMIT,
      maxConcurrentRuns: 1,
      localQueueCapacity: 0,
      maxWorkersPerRun: 1,
    },
    commandToken: "",
    natsUrl: "",
  };
  const pod = buildRuntimePod(neutral, opts);
  const names = runtimeNames(opts.namePrefix ?? "drover-rt", memberId);
  const field = (name: string, fieldPath: string): V1EnvVar => ({ name, valueFrom: { fieldRef: { fieldPath } } });
  const reserved = /^(?:DROVER_[A-Z0-9_]+|NATS_[A-Z0-9_]+)$/;
  const env: V1EnvVar[] = [
    // Configuration only (log level…): nothing in it can name an identity, token or NATS server.
    ...Object.entries(opts.baseEnv ?? {})
      .filter(([k]) => !reserved.test(k))
      .map(([name, value]) => ({ name, value })),
    { name: "DROVER_POOL_BIND_PORT", value: String(RUNTIME_OPS_PORT) },
    { name: "DROVER_OPS_PORT", value: String(RUNTIME_OPS_PORT) },
    field("DROVER_BIND_HOST", "status.podIP"),
    field("DROVER_OPS_HOST", "status.podIP"),
    field("DROVER_POD_UID", "metadata.uid"),
    { name: "DROVER_POOL_TOKEN", valueFrom: { secretKeyRef: { name: names.secret, key: POOL_TOKEN_KEY } } },
    ...(opts.natsCaSecret ? [{ name: "NATS_CA_FILE", value: `${NATS_CA_DIR}/ca.pem` }] : []),
  ];
  const [container] = pod.spec!.containers;
  return {
    metadata: { name: names.pod, namespace: opts.namespace, ...poolMetadata(memberId, controlPlaneId, opts.provider) },
    spec: {
      ...pod.spec!,
      containers: [
        {
          ...container!,
          env,
          ports: [
            { name: "http", containerPort: RUNTIME_PORT.http, protocol: "TCP" },
            { name: "grpc", containerPort: RUNTIME_PORT.grpc, protocol: "TCP" },
            { name: "ops", containerPort: RUNTIME_OPS_PORT, protocol: "TCP" },
          ],
        },
      ],
    },
  };
}

/**
 * The member's Secret: its pool token only (it authenticates the one binding). Owned by the member's
 * Pod, so the garbage collector removes it with the Pod, whoever deletes that (a dead provisioner's
 * members included).
 */
export function buildPoolTokenSecret(
  memberId: string,
  controlPlaneId: string,
  poolToken: string,
  pod: { readonly name: string; readonly uid: string },
  opts: RuntimePodOptions,
): V1Secret {
  return {
    metadata: {
      name: runtimeNames(opts.namePrefix ?? "drover-rt", memberId).secret,
      namespace: opts.namespace,
      ...poolMetadata(memberId, controlPlaneId, opts.provider),
      ownerReferences: [{ apiVersion: "v1", kind: "Pod", name: pod.name, uid: pod.uid }],
    },
    type: "Opaque",
    stringData: { [POOL_TOKEN_KEY]: poolToken },
  };
}
