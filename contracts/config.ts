import { z } from "zod";
import { ControlPlaneId, TenantId } from "./ids.ts";
import { runtimePrefixOf, TenantSettings } from "./tenant-settings.ts";

const label = z.string().regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, "lowercase [a-z0-9-], at most 63 characters");

/** A bearer credential: a tenant's (scoped to that tenant) or an operator's (sees every tenant). */
export const Credential = z.discriminatedUnion("role", [
  z
    .object({
      role: z.literal("tenant"),
      tenantId: TenantId,
      name: label.optional().describe("the token's name: wait resolvers name it as token:<name>"),
      roles: z.array(label).max(32).optional().describe("roles wait resolvers name as role:<role>"),
    })
    .strict(),
  z.object({ role: z.literal("operator"), name: z.string().min(1).max(63) }).strict(),
]);
export type Credential = z.infer<typeof Credential>;

/** A Kubernetes resource quantity as Pod specs take it: `100m`, `0.5`, `128Mi`, `1Gi`. */
const quantity = z
  .string()
  .regex(/^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/, "must be a Kubernetes quantity (100m, 128Mi, 1Gi)");

const dnsLabel = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "must be a DNS-1123 label")
  .max(63);

/**
 * Where and how runtime Pods are hosted (hosts.md "Kubernetes strategy"); read by the provisioner
 * (start) and recovery (kill). Absent: no Kubernetes host strategy, and a tenant asking for one is
 * rejected with `host-config-missing`.
 */
export const KubernetesHostConfig = z
  .object({
    kubeconfig: z.string().min(1).optional().describe("kubeconfig path; absent → the in-cluster service account"),
    namespace: dnsLabel.default("drover-runtimes"),
    namePrefix: z
      .string()
      .regex(/^[a-z0-9-]{1,30}$/)
      .default("drover-rt"),
    exposure: z.enum(["pod-ip", "gateway", "node-port", "port-forward"]).default("pod-ip"),
    forwardAddress: z
      .string()
      .min(1)
      .max(253)
      .optional()
      .describe(
        "port-forward exposure: the address the provisioner's per-runtime listeners bind; absent → 127.0.0.1 (only the provisioner's machine reaches them)",
      ),
    nodeAddress: z
      .string()
      .min(1)
      .max(253)
      .optional()
      .describe(
        "node-port exposure: the address clients dial with the allocated nodePort; absent → the runtime Pod's hostIP (its Node's InternalIP)",
      ),
    gateway: z
      .object({
        name: dnsLabel,
        namespace: dnsLabel,
        className: z.string().min(1).max(253),
        httpPort: z.number().int().min(1).max(65_535).default(8080),
        grpcPort: z.number().int().min(1).max(65_535).default(8081),
      })
      .strict()
      .optional(),
    runtimeImage: z
      .string()
      .min(1)
      .default("drover/runtime:dev")
      .describe(
        "the runtime image `make image` builds: its archive carries drover/runtime:<content hash> (pin that one) and drover/runtime:dev (the newest build)",
      ),
    runtimeCommand: z
      .array(z.string().min(1))
      .min(1)
      .default(["/usr/local/bin/node", "/app/runtime-loader.cjs", "/app/runtime.cjs"])
      .describe("the runtime's argv in its container: the entrypoint of the image `make image` builds"),
    workingDir: z
      .string()
      .min(1)
      .optional()
      .describe("the runtime's working directory (the repository, for the local cluster)"),
    natsCaSecret: z
      .string()
      .min(1)
      .optional()
      .describe(
        "a Secret in the runtime namespace holding the CA of a TLS nats-server (key ca.pem): mounted into every runtime Pod, NATS_CA_FILE points at it",
      ),
    readinessTimeoutMs: z.number().int().min(1000).default(60_000),
    killGraceSeconds: z
      .number()
      .int()
      .min(0)
      .max(300)
      .default(1)
      .describe("grace of a kill's first delete; short: a fenced runtime must stop, not drain"),
    runtimeResources: z
      .object({
        cpuRequest: quantity.default("100m"),
        memoryRequest: quantity.default("128Mi"),
        memoryLimit: quantity.default("1Gi"),
      })
      .strict()
      .prefault({})
      .describe(
        "each runtime Pod's requests and memory limit (its CPU limit is the runtime's worker count); the scheduler fits allocatable CPU ÷ cpuRequest runtimes on a node",
      ),
  })
  .strict()
  .refine((k) => k.exposure !== "gateway" || k.gateway !== undefined, {
    message: "exposure gateway needs kubernetes.gateway",
    path: ["gateway"],
  });
export type KubernetesHostConfig = z.infer<typeof KubernetesHostConfig>;

/**
 * drover's configuration file (DROVER_CONFIG), shared by every service and validated at start-up;
 * a bad file stops the service with the schema's message. Tokens map to credentials: the API derives
 * TenantId from the caller's token and from nothing else.
 */
export const DroverConfig = z
  .object({
    controlPlaneId: ControlPlaneId,
    tenants: z.array(TenantSettings).default([]),
    tokens: z
      .record(z.string().min(16, "tokens are at least 16 characters"), Credential)
      .default({})
      .describe("key: sha256:<hex SHA-256 of the token> (plaintext keys only with DROVER_DEV=1; docs/security.md)"),
    api: z
      .object({
        host: z.string().default("127.0.0.1"),
        port: z.number().int().min(0).max(65535).default(8080),
        rateLimit: z
          .object({
            max: z.number().int().min(1).max(1_000_000).default(6000),
            timeWindowMs: z.number().int().min(1000).max(3_600_000).default(60_000),
          })
          .strict()
          .prefault({})
          .describe("requests per credential (bearer token) per window on /v1; over it: 429 rate-limited"),
        maxEventFeedsPerCredential: z
          .number()
          .int()
          .min(1)
          .max(10_000)
          .default(16)
          .describe("concurrent SSE feeds per credential; over it: 429 too-many-event-feeds"),
      })
      .strict()
      .prefault({}),
    heartbeatIntervalMs: z.number().int().min(50).max(60_000).default(1000),
    staleHeartbeatMs: z.number().int().min(150).max(600_000).optional().describe("default 3 × heartbeatIntervalMs"),
    maxConcurrentHostStartups: z.number().int().min(1).max(64).default(4),
    warmPool: z
      .object({
        process: z.number().int().min(0).max(256).default(0),
        kubernetes: z
          .number()
          .int()
          .min(0)
          .max(256)
          .default(0)
          .describe("runtime Pods kept warm (pod-ip exposure only; docs/kubernetes.md Warm pools)"),
      })
      .strict()
      .prefault({})
      .describe(
        "runtimes each provisioner keeps started ahead of need per host provider, tenant-neutral, bound on a scale-out (services/provisioner/README.md, Warm pool); 0: every runtime cold-starts",
      ),
    scaleOutExpiryMs: z.number().int().min(1000).default(120_000),
    queueStallMs: z
      .number()
      .int()
      .min(1000)
      .default(30_000)
      .describe("a run queued this long with no visible capacity and no open scale-out is re-planned (queue-stalled)"),
    dispatchTimeoutMs: z.number().int().min(100).default(5_000),
    sharedRuntimeHeadroom: z
      .number()
      .int()
      .min(0)
      .max(1024)
      .default(2)
      .describe(
        "the last this many free places (slots + local queue) of a shared runtime are kept for tenants holding fewer than this many runs on it or with at most this many waiting, in their turn of the fair share; 0: off (docs/security.md Floods)",
      ),
    fenceDeadlineMs: z.number().int().min(100).default(15_000),
    maxStaleSuspicionShare: z
      .number()
      .gt(0)
      .max(1)
      .default(0.5)
      .describe(
        "share of live runtimes heartbeat silence alone may have under suspicion at once (at least one); the rest wait (fence-storm-cap). Host-proven deaths are not capped",
      ),
    llmBaseUrl: z.string().optional(),
    kubernetes: KubernetesHostConfig.optional(),
    processHosts: z
      .enum(["allowed", "refused"])
      .default("allowed")
      .describe(
        "refused where the control plane runs as a cluster (k8s/drover/): no provisioner starts process hosts and recovery fences none (a process host is fenced only from its own PID namespace; docs/security.md)",
      ),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.processHosts === "refused")
      for (const t of c.tenants.filter((x) => x.hostProvider === "process"))
        ctx.addIssue({
          code: "custom",
          message: `tenant ${t.tenantId} asks for process hosts, which processHosts "refused" forbids: set its hostProvider`,
          path: ["tenants"],
        });
    const ids = new Set<string>();
    // tenant → runtime prefix: a prefix's runtime limit is decided on the tenant's quota aggregate
    // (`drover.quota.<tenant>.<prefix>`), so one prefix must belong to one tenant.
    const prefixes = new Map<string, string>();
    for (const t of c.tenants) {
      if (ids.has(t.tenantId))
        ctx.addIssue({ code: "custom", message: `tenant ${t.tenantId} is configured twice`, path: ["tenants"] });
      ids.add(t.tenantId);
      const prefix = runtimePrefixOf(t);
      const other = prefixes.get(prefix);
      if (other !== undefined && other !== t.tenantId)
        ctx.addIssue({
          code: "custom",
          message: `tenants ${other} and ${t.tenantId} share the runtime prefix ${prefix}: each tenant needs its own`,
          path: ["tenants"],
        });
      prefixes.set(prefix, t.tenantId);
    }
  });
export type DroverConfig = z.infer<typeof DroverConfig>;

/** The tenant's settings, or the documented shared defaults for an unknown tenant (never another tenant's). */
export function tenantSettingsOf(config: DroverConfig, tenantId: string): TenantSettings {
  return config.tenants.find((t) => t.tenantId === tenantId) ?? TenantSettings.parse({ tenantId });
}

export const staleHeartbeatMsOf = (c: DroverConfig): number => c.staleHeartbeatMs ?? 3 * c.heartbeatIntervalMs;
