import type { V1EnvVar, V1ObjectMeta, V1Pod, V1Secret, V1Service } from "@kubernetes/client-node";
import { identityKey, runtimeEnv } from "../runtime-env.ts";
import type { HostSpec } from "../types.ts";
import { labelValue, resourceName } from "./names.ts";

// Type-only SDK imports: the objects built here are plain JSON; the SDK itself stays in strategy.ts.

/** How runtime Pods are built; everything else comes from the HostSpec. */
export interface RuntimePodOptions {
  readonly namespace: string;
  /** Readable start of every object name (default `drover-rt`). */
  readonly namePrefix?: string;
  /** The runtime's argv: the runtime image's entrypoint (`/usr/local/bin/node /app/runtime-loader.cjs /app/runtime.cjs` for the image `make image` builds). */
  readonly command: readonly string[];
  /** The runtime image (`make image` builds it; the local cluster's node has it imported, a real cluster pulls or loads it). */
  readonly image: string;
  readonly workingDir?: string;
  /**
   * Secret (runtime namespace, key `ca.pem`) with the CA of a TLS nats-server: mounted read-only at
   * {@link NATS_CA_DIR} and named by NATS_CA_FILE, so the runtime verifies the server (docs/nats-identities.md "TLS").
   */
  readonly natsCaSecret?: string;
  /** Configuration for the runtime (log level, PATH…). Identity, tenant, sizing, token and endpoint variables in it are dropped. */
  readonly baseEnv?: Readonly<Record<string, string>>;
  readonly terminationGraceSeconds?: number;
  /** Label value of `drover.dev/provider` (which runtime implementation the Pod runs). */
  readonly provider?: string;
  /** Requests and memory limit of the runtime container (default {@link DEFAULT_RUNTIME_RESOURCES}); the CPU limit is the worker count. */
  readonly resources?: RuntimeResources;
  /**
   * Bind the command port on every address of the Pod's network namespace (0.0.0.0: its Pod IP and
   * its loopback) instead of the Pod IP alone: `port-forward` exposure needs it, since the kubelet's
   * streaming server dials `localhost:<port>` inside the Pod. Only containers of the Pod share that
   * loopback, and the runtime is the only one.
   */
  readonly bindAllAddresses?: boolean;
}

/** What the scheduler reserves for one runtime Pod, and its memory ceiling (quantities as Kubernetes writes them). */
export interface RuntimeResources {
  readonly cpuRequest: string;
  readonly memoryRequest: string;
  readonly memoryLimit: string;
}

/**
 * For a real cluster: 100m CPU and 128Mi reserved per runtime (an idle runtime uses a few millicores
 * and ~60 MiB), 1Gi memory ceiling. A 2-CPU node fits only 20 runtimes at 100m: a small local node
 * running many idle runtimes (the proof at P=15) configures a smaller CPU request instead.
 */
export const DEFAULT_RUNTIME_RESOURCES: RuntimeResources = {
  cpuRequest: "100m",
  memoryRequest: "128Mi",
  memoryLimit: "1Gi",
};

export const L = {
  controlPlane: "drover.dev/control-plane-id",
  runtime: "drover.dev/runtime-instance-id",
  tenant: "drover.dev/tenant-id",
  tenantGroup: "drover.dev/tenant-group-id",
  provider: "drover.dev/provider",
  transport: "drover.dev/transport",
  hostProvider: "drover.dev/host-provider",
  managedBy: "drover.dev/managed-by",
  identity: "drover.dev/identity",
} as const;
export const MANAGED_BY = "drover-control-plane";
/** Each Pod has its own IP, so every runtime listens on the same well-known port of its transport. */
export const RUNTIME_PORT = { http: 8080, grpc: 9090 } as const;
/** The runtime's ops listener (`/healthz`, `/readyz`, `/metrics`, platform/ops-server.ts): its readiness probe. */
export const RUNTIME_OPS_PORT = 9091;
const TOKEN_KEY = "token";
const NATS_CREDS_KEY = "nats-creds";

/**
 * The names of one runtime's objects; Pod, Service and route share one (different kinds), the Secret
 * has its own, and so has the NodePort Service of `node-port` exposure (a second Service).
 */
export function runtimeNames(
  prefix: string,
  runtimeInstanceId: string,
): { pod: string; service: string; route: string; secret: string; nodePort: string } {
  const name = resourceName(prefix, runtimeInstanceId, runtimeInstanceId);
  return {
    pod: name,
    service: name,
    route: name,
    secret: resourceName(`${prefix}-token`, runtimeInstanceId, runtimeInstanceId),
    nodePort: resourceName(`${prefix}-np`, runtimeInstanceId, runtimeInstanceId),
  };
}

/**
 * Labels (selection, values hashed when too long) and annotations (full values) identifying the
 * runtime. `drover.dev/identity` holds the identity key (instance, tenant, isolation, transport,
 * sizing): two starts converge only when it is equal, exactly as for process hosts.
 */
export function runtimeMetadata(
  spec: HostSpec,
  provider = "drover-runtime",
): { labels: Record<string, string>; annotations: Record<string, string> } {
  const full: Record<string, string | undefined> = {
    [L.controlPlane]: spec.controlPlaneId,
    [L.runtime]: spec.runtimeInstanceId,
    [L.tenant]: spec.tenantId,
    [L.tenantGroup]: spec.tenantGroupId,
    [L.provider]: provider,
    [L.transport]: spec.transport,
    [L.hostProvider]: "kubernetes",
    [L.managedBy]: MANAGED_BY,
  };
  const labels: Record<string, string> = {};
  const annotations: Record<string, string> = {
    [L.identity]: identityKey(spec),
    "drover.dev/isolation-mode": spec.isolationMode,
  };
  for (const [k, v] of Object.entries(full)) {
    if (v === undefined) continue;
    labels[k] = labelValue(v);
    annotations[k] = v;
  }
  return { labels, annotations };
}

/**
 * True when an existing object is this runtime's: every expected `drover.dev/` label is present
 * with the same value, it has no other `drover.dev/` label, and its identity annotation is equal.
 * The name alone never proves anything: anything may have created an object with that name.
 */
export function sameIdentity(
  expected: { labels: Record<string, string>; annotations: Record<string, string> },
  actual: V1ObjectMeta | undefined,
): boolean {
  const got = Object.entries(actual?.labels ?? {}).filter(([k]) => k.startsWith("drover.dev/"));
  const want = Object.entries(expected.labels);
  return (
    got.length === want.length &&
    want.every(([k, v]) => actual?.labels?.[k] === v) &&
    actual?.annotations?.[L.identity] === expected.annotations[L.identity]
  );
}

/** The Secret holding the instance command token (the Pod reads it through secretKeyRef; it is never in the Pod spec). */
export function buildTokenSecret(spec: HostSpec, opts: RuntimePodOptions): V1Secret {
  const names = runtimeNames(opts.namePrefix ?? "drover-rt", spec.runtimeInstanceId);
  return {
    metadata: { name: names.secret, namespace: opts.namespace, ...runtimeMetadata(spec, opts.provider) },
    type: "Opaque",
    stringData: { [TOKEN_KEY]: spec.commandToken, ...(spec.natsCreds ? { [NATS_CREDS_KEY]: spec.natsCreds } : {}) },
  };
}

/**
 * The runtime Pod. Identity, tenant, sizing, NATS URL and port are literal env values that no
 * `baseEnv` entry can override (it is filtered, then listed first); the token comes from the
 * Secret, the bind address from the Pod IP and DROVER_POD_UID from metadata.uid (the runtime's
 * incarnation is then `pod:<uid>`). restartPolicy Never: a restarted container would run under
 * the same UID, i.e. a second life of an incarnation recovery may already have fenced. Readiness is
 * the runtime's own `/readyz` on its ops listener (Pod IP, {@link RUNTIME_OPS_PORT}): NATS answers,
 * the streams exist and the command listener is bound; three failures in a row (3 s) before
 * Kubernetes drops it, so a NATS blip does not. drover's command layer is still proven by a real
 * GetQueueStatus.
 */
/** Where a runtime Pod mounts the NATS CA Secret (RuntimePodOptions.natsCaSecret). */
export const NATS_CA_DIR = "/etc/drover-nats-ca";

export function buildRuntimePod(spec: HostSpec, opts: RuntimePodOptions): V1Pod {
  const names = runtimeNames(opts.namePrefix ?? "drover-rt", spec.runtimeInstanceId);
  const resources = opts.resources ?? DEFAULT_RUNTIME_RESOURCES;
  const port = RUNTIME_PORT[spec.transport];
  const identity = runtimeEnv(spec, "", port);
  const reserved = new Set([
    ...Object.keys(identity),
    "DROVER_POD_UID",
    "DROVER_TENANT_ID",
    "DROVER_STREAM_TAG",
    "DROVER_HEARTBEAT_MS",
    "DROVER_LLM_BASE_URL",
    "DROVER_EGRESS",
    "DROVER_OPS_HOST",
    "DROVER_OPS_PORT",
    // A path of the provisioner's filesystem means nothing in the Pod: only natsCaSecret sets it.
    "NATS_CA_FILE",
  ]);
  const base = Object.entries(opts.baseEnv ?? {}).filter(([k]) => !reserved.has(k));
  // Secret values are never literal in a Pod spec (anyone who can `get pods` reads those).
  const notLiteral = new Set(["DROVER_COMMAND_TOKEN", "DROVER_BIND_HOST", "DROVER_SECRETS_JSON", "NATS_CREDS"]);
  const literal = Object.entries(identity).filter(([k]) => !notLiteral.has(k) && k !== "NATS_CA_FILE");
  const env: V1EnvVar[] = [
    ...[...base, ...literal].map(([name, value]) => ({ name, value })),
    { name: "DROVER_OPS_PORT", value: String(RUNTIME_OPS_PORT) },
    opts.bindAllAddresses
      ? { name: "DROVER_BIND_HOST", value: "0.0.0.0" }
      : { name: "DROVER_BIND_HOST", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
    { name: "DROVER_OPS_HOST", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
    { name: "DROVER_POD_UID", valueFrom: { fieldRef: { fieldPath: "metadata.uid" } } },
    { name: "DROVER_COMMAND_TOKEN", valueFrom: { secretKeyRef: { name: names.secret, key: TOKEN_KEY } } },
    ...(spec.natsCreds
      ? [{ name: "NATS_CREDS", valueFrom: { secretKeyRef: { name: names.secret, key: NATS_CREDS_KEY } } }]
      : []),
    ...(opts.natsCaSecret ? [{ name: "NATS_CA_FILE", value: `${NATS_CA_DIR}/ca.pem` }] : []),
    // The tenant's secrets: its own Secret (key `secrets.json`, a JSON object of name → value).
    ...(spec.kubernetesSecret
      ? [
          {
            name: "DROVER_SECRETS_JSON",
            valueFrom: { secretKeyRef: { name: spec.kubernetesSecret, key: "secrets.json", optional: true } },
          },
        ]
      : []),
  ];
  return {
    metadata: { name: names.pod, namespace: opts.namespace, ...runtimeMetadata(spec, opts.provider) },
    spec: {
      restartPolicy: "Never",
      terminationGracePeriodSeconds: opts.terminationGraceSeconds ?? 30,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      // Pod Security Standard "restricted" (the runtime namespace enforces it, k8s/drover/00-namespaces.yaml); uid 1000 is the image's `node` user.
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 1000,
        runAsGroup: 1000,
        seccompProfile: { type: "RuntimeDefault" },
      },
      volumes: [
        { name: "tmp", emptyDir: { sizeLimit: "256Mi" } },
        ...(opts.natsCaSecret
          ? [{ name: "nats-ca", secret: { secretName: opts.natsCaSecret, items: [{ key: "ca.pem", path: "ca.pem" }] } }]
          : []),
      ],
      containers: [
        {
          name: "runtime",
          image: spec.image ?? opts.image,
          command: [...opts.command],
          ...(opts.workingDir ? { workingDir: opts.workingDir } : {}),
          env,
          ports: [
            { name: spec.transport, containerPort: port, protocol: "TCP" },
            { name: "ops", containerPort: RUNTIME_OPS_PORT, protocol: "TCP" },
          ],
          readinessProbe: { httpGet: { path: "/readyz", port: "ops" }, periodSeconds: 1, failureThreshold: 3 },
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ["ALL"] },
          },
          // The only writable path (tsx's cache, temporary files); the root filesystem is read-only.
          volumeMounts: [
            { name: "tmp", mountPath: "/tmp" },
            ...(opts.natsCaSecret ? [{ name: "nats-ca", mountPath: NATS_CA_DIR, readOnly: true }] : []),
          ],
          resources: {
            requests: { cpu: resources.cpuRequest, memory: resources.memoryRequest },
            limits: { cpu: String(spec.sizing.workers), memory: resources.memoryLimit },
          },
        },
      ],
    },
  };
}

/**
 * The per-runtime Service selecting exactly this runtime's Pod (by instance and control plane).
 * gRPC ports declare `kubernetes.io/h2c` so a gateway speaks plaintext HTTP/2 to the backend
 * instead of negotiating a protocol a proxy may not preserve.
 */
export function buildRuntimeService(spec: HostSpec, opts: RuntimePodOptions): V1Service {
  return runtimeService(spec, opts, runtimeNames(opts.namePrefix ?? "drover-rt", spec.runtimeInstanceId).service);
}

/**
 * The per-runtime Service of `node-port` exposure: `type: NodePort`, the same selector (exactly this
 * runtime's Pod), port and appProtocol as {@link buildRuntimeService}, under its own name; the node
 * port is left to the API server to allocate (a fixed one would collide across runtimes).
 * `externalTrafficPolicy: Local` would drop traffic on nodes without the Pod, so the default
 * (Cluster) is kept.
 */
export function buildNodePortService(spec: HostSpec, opts: RuntimePodOptions): V1Service {
  const svc = runtimeService(spec, opts, runtimeNames(opts.namePrefix ?? "drover-rt", spec.runtimeInstanceId).nodePort);
  return { ...svc, spec: { ...svc.spec, type: "NodePort" } };
}

function runtimeService(spec: HostSpec, opts: RuntimePodOptions, name: string): V1Service {
  const meta = runtimeMetadata(spec, opts.provider);
  return {
    metadata: { name, namespace: opts.namespace, ...meta },
    spec: {
      selector: {
        [L.runtime]: meta.labels[L.runtime] as string,
        [L.controlPlane]: meta.labels[L.controlPlane] as string,
      },
      ports: [
        {
          name: spec.transport,
          port: RUNTIME_PORT[spec.transport],
          targetPort: spec.transport,
          appProtocol: spec.transport === "grpc" ? "kubernetes.io/h2c" : "http",
        },
      ],
    },
  };
}
