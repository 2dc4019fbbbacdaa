import { z } from "zod";
import { EgressSettings } from "./egress.ts";
import { FlowKeySettings, MAX_FLOW_KEYS, RunPriority } from "./flow-control.ts";
import { TenantGroupId, TenantId } from "./ids.ts";

export const IsolationMode = z.enum(["shared", "dedicated", "hybrid"]);
export type IsolationMode = z.infer<typeof IsolationMode>;
export const HostProvider = z.enum(["process", "kubernetes"]);
export type HostProvider = z.infer<typeof HostProvider>;
export const Transport = z.enum(["http", "grpc"]);
export type Transport = z.infer<typeof Transport>;

/** Sizing of one runtime instance. Precedence: tenant settings > scale-out request > provider defaults. */
export const RuntimeSizing = z
  .object({
    workers: z.number().int().min(1).max(256),
    maxConcurrentRuns: z.number().int().min(1).max(1024),
    localQueueCapacity: z.number().int().min(0).max(10_000),
    maxWorkersPerRun: z.number().int().min(1).max(256),
  })
  .strict();
export type RuntimeSizing = z.infer<typeof RuntimeSizing>;

const handlerName = z.string().regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, "a handler name is lowercase [a-z0-9-]");

/**
 * The tenant's own step code (docs/sdk.md): a module whose default export is `defineWorker(...)`.
 * Process hosts bundle `module` (a path, relative to the repository) with esbuild; Kubernetes hosts
 * run `image` (default: the provisioner's `runtimeImage`) with the module path inside it; a digest
 * reference (`repo@sha256:…`) makes its digest the worker version (docs/worker-versions.md). `kinds` are the handler names its runtimes
 * advertise (`custom:<name>`); a runtime whose module lacks one refuses to start (`worker-invalid`).
 */
export const WorkerSettings = z
  .object({
    module: z.string().min(1).max(1024),
    image: z.string().min(1).max(512).optional(),
    kinds: z.array(handlerName).min(1).max(256),
  })
  .strict();
export type WorkerSettings = z.infer<typeof WorkerSettings>;

/**
 * A tenant worker's version (docs/worker-versions.md): the sha256 (hex) of the module file its
 * runtimes import — on process hosts the esbuild bundle the provisioner built from `worker.module`;
 * on Kubernetes hosts the digest of the image its Pods run (a reference `…@sha256:<hex>`).
 */
export const WorkerVersion = z.string().regex(/^[0-9a-f]{64}$/, "a worker version is a sha256 in hex");
export type WorkerVersion = z.infer<typeof WorkerVersion>;

/** The worker a runtime runs (on `runtime.registered`): its version, when it was deployed, and whether it drains. */
export const RuntimeWorker = z
  .object({
    version: WorkerVersion,
    deployedAt: z.iso.datetime().describe("when a provisioner last built this version from the tenant's worker.module"),
    pinned: z.boolean().describe("started for runs pinned to this version: takes those runs only, never new ones"),
    image: z
      .string()
      .min(1)
      .max(512)
      .optional()
      .describe("Kubernetes hosts: the image reference (`…@sha256:<version>`) the Pod runs; absent on process hosts"),
  })
  .strict();
export type RuntimeWorker = z.infer<typeof RuntimeWorker>;

/**
 * Where the tenant's secrets live (never in an event): for process hosts a JSON file of
 * `{ name: value }` and/or environment variables of the provisioner named per secret; for
 * Kubernetes hosts the Secret `kubernetesSecret` in the runtimes' namespace.
 */
export const SecretSource = z
  .object({
    file: z.string().min(1).max(1024).optional(),
    env: z
      .record(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/), z.string().regex(/^[A-Z_][A-Z0-9_]*$/))
      .optional(),
    kubernetesSecret: z.string().min(1).max(253).optional(),
  })
  .strict();
export type SecretSource = z.infer<typeof SecretSource>;

/**
 * The pace of a tenant's API submissions (per API replica, in memory): while the tenant has more than
 * `queuedRunsAbove` runs submitted and not yet started, a new submission takes a token of a GCRA
 * bucket of `perSecond` with bursts of `burst` (contracts/gcra.ts), or is refused with 429
 * `submission-rate-limited` and the wait for the next token. Below that depth nothing is paced.
 */
const QUEUED_RUNS_ABOVE_DEFAULT = 200;
const PER_SECOND_DEFAULT = 20;
const BURST_DEFAULT = 20;
export const SubmissionPace = z
  .object({
    queuedRunsAbove: z.number().int().min(0).max(1_000_000).default(QUEUED_RUNS_ABOVE_DEFAULT),
    perSecond: z.number().positive().max(100_000).default(PER_SECOND_DEFAULT),
    burst: z.number().int().min(1).max(100_000).default(BURST_DEFAULT),
  })
  .strict();
export type SubmissionPace = z.infer<typeof SubmissionPace>;

/** Per-tenant settings (admission-and-capacity.md "Tenant settings"). */
export const TenantSettings = z
  .object({
    tenantId: TenantId,
    tenantGroupId: TenantGroupId.optional(),
    isolationMode: IsolationMode.default("shared"),
    preferDedicatedCapacity: z.boolean().default(false),
    allowSharedFallback: z.boolean().default(false),
    maxRuntimeInstances: z.number().int().min(0).max(1000).default(2),
    workersPerInstance: z.number().int().min(1).max(256).default(2),
    maxConcurrentRunsPerInstance: z.number().int().min(1).max(1024).default(2),
    maxWorkersPerRun: z.number().int().min(1).max(256).default(1),
    localQueueCapacity: z.number().int().min(0).max(10_000).default(8),
    runtimeInstanceIdPrefix: z
      .string()
      .regex(/^[a-z0-9](?:[a-z0-9-]{0,30})$/, "prefix: lowercase [a-z0-9-], at most 31 characters")
      .optional(),
    maxConcurrentRuns: z.number().int().min(1).max(100_000).default(100),
    maxQueuedRuns: z
      .number()
      .int()
      .min(1)
      .max(1_000_000)
      .default(1000)
      .describe("runs submitted and not yet started; the API refuses more with 429 tenant-queue-full"),
    submissionPace: SubmissionPace.default(SubmissionPace.parse({})).describe(
      "API submissions paced per tenant while its queue is deep (429 submission-rate-limited; docs/security.md)",
    ),
    overQuota: z
      .enum(["reject", "queue"])
      .default("queue")
      .describe("what happens to a submission over maxConcurrentRuns"),
    weight: z.number().int().min(1).max(1000).default(1),
    hostProvider: HostProvider.default("process"),
    transport: Transport.default("http"),
    worker: WorkerSettings.optional().describe("the tenant's own step code; dedicated or hybrid tenants only"),
    secrets: SecretSource.optional(),
    maxCrashRecoveries: z
      .number()
      .int()
      .min(0)
      .max(100)
      .default(3)
      .describe("resumes of one execution after it crashed its runtime; one crash more fails the run with crash-loop"),
    egress: EgressSettings.optional().describe(
      "egress of http and llm steps: private destinations allowed, response cap (docs/security.md)",
    ),
    flowKeys: z
      .array(FlowKeySettings)
      .max(MAX_FLOW_KEYS)
      .default([])
      .refine((ks) => new Set(ks.map((k) => k.name)).size === ks.length, { message: "flow key names are unique" })
      .describe("per-key concurrency and rate limits of the tenant's runs (docs/flow-control.md)"),
    maxRunPriority: RunPriority.default(10).describe("a run's priority above this counts as this"),
  })
  .strict()
  .refine((t) => t.worker === undefined || t.isolationMode !== "shared", {
    message: "a worker needs isolationMode dedicated or hybrid: shared runtimes run built-in step kinds only",
    path: ["worker"],
  });
export type TenantSettings = z.infer<typeof TenantSettings>;

/** Settings for a tenant the configuration does not name: shared, documented defaults, never another tenant's. */
export function defaultTenantSettings(tenantId: TenantId): TenantSettings {
  return TenantSettings.parse({ tenantId });
}

export const RUNTIME_PREFIX_MAX_LENGTH = 31;

/**
 * The prefix runtime ids of this tenant start with: the configured one, or `rt-<tenantId>` when that
 * fits in 31 characters. A longer tenant id is shortened to `rt-<first 19 characters>-<8 hex of
 * FNV-1a(tenantId)>`: plain truncation would give two tenants sharing their first 28 characters the
 * same prefix, and a tenant's runtime count is taken by prefix (admission-and-capacity.md "Limits").
 */
export function runtimePrefixOf(t: TenantSettings): string {
  if (t.runtimeInstanceIdPrefix !== undefined) return t.runtimeInstanceIdPrefix;
  const whole = `rt-${t.tenantId}`;
  if (whole.length <= RUNTIME_PREFIX_MAX_LENGTH) return whole;
  return `rt-${t.tenantId.slice(0, 19).replace(/-+$/, "")}-${fnv1a32(t.tenantId)}`;
}

/** FNV-1a 32-bit as 8 hex digits: a stable, dependency-free digest (contracts cannot import node:crypto). */
function fnv1a32(s: string): string {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(s)) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h.toString(16).padStart(8, "0");
}

export function sizingOf(t: TenantSettings): RuntimeSizing {
  return {
    workers: t.workersPerInstance,
    maxConcurrentRuns: t.maxConcurrentRunsPerInstance,
    localQueueCapacity: t.localQueueCapacity,
    maxWorkersPerRun: t.maxWorkersPerRun,
  };
}
