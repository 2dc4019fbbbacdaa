import { z } from "zod";
import {
  ControlPlaneId,
  EgressByTenant,
  RuntimeInstanceId,
  RuntimeSizing,
  TenantId,
  Transport,
} from "../../../contracts/index.ts";

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const sizing = RuntimeSizing.shape;

/**
 * The runtime's start-up environment. Every variable is named as it appears in the environment so
 * a refusal names exactly the variable to fix. Identity (instance, control plane, tenant) is
 * given by the provisioner and never defaulted; sizing comes from the host spec.
 */
export const RuntimeEnv = z.object({
  DROVER_RUNTIME_INSTANCE_ID: RuntimeInstanceId,
  DROVER_CONTROL_PLANE_ID: ControlPlaneId,
  DROVER_TENANT_ID: TenantId.optional().describe("absent for shared runtimes"),
  DROVER_WORKERS: int(sizing.workers.minValue ?? 1, sizing.workers.maxValue ?? 256),
  DROVER_MAX_CONCURRENT_RUNS: int(sizing.maxConcurrentRuns.minValue ?? 1, sizing.maxConcurrentRuns.maxValue ?? 1024),
  DROVER_LOCAL_QUEUE_CAPACITY: int(
    sizing.localQueueCapacity.minValue ?? 0,
    sizing.localQueueCapacity.maxValue ?? 10_000,
  ),
  DROVER_MAX_WORKERS_PER_RUN: int(sizing.maxWorkersPerRun.minValue ?? 1, sizing.maxWorkersPerRun.maxValue ?? 256),
  DROVER_COMMAND_TOKEN: z.string().min(16, "the command token must be at least 16 characters").max(512),
  NATS_URL: z.string().regex(/^(nats|tls|wss?):\/\/\S+$/, "must be a nats:// (or tls://, ws://) URL"),
  NATS_CREDS: z.string().max(600).optional(),
  DROVER_TRANSPORT: Transport,
  DROVER_BIND_HOST: z.string().min(1).default("127.0.0.1"),
  DROVER_PORT: int(0, 65_535),
  DROVER_STREAM_TAG: z
    .string()
    .regex(/^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/, "must be lowercase [a-z0-9-]")
    .max(40)
    .optional(),
  DROVER_HEARTBEAT_MS: int(50, 60_000).default(1000),
  DROVER_RUNTIME_STOP_BUDGET_MS: int(100, 600_000)
    .default(10_000)
    .describe("how long a SIGTERM drain waits while NATS is unreachable, and each closing step may take (stop.ts)"),
  DROVER_LLM_BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
  DROVER_EGRESS: z
    .string()
    .max(1024 * 1024)
    .transform((s, ctx) => {
      try {
        return JSON.parse(s) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "must be JSON" });
        return z.NEVER;
      }
    })
    .pipe(EgressByTenant)
    .optional()
    .describe("egress settings by TenantId (docs/security.md); tenants absent get the defaults"),
  DROVER_WORKER_MODULE: z
    .string()
    .min(1)
    .max(4096)
    .optional()
    .describe("the tenant's worker module (a bundle or source file)"),
  DROVER_WORKER_KINDS: z
    .string()
    .regex(/^[a-z0-9-]+(?:,[a-z0-9-]+)*$/, "comma-separated handler names")
    .optional()
    .describe("handlers the tenant's settings declare; the module must have each"),
  DROVER_SECRETS_FILE: z.string().min(1).max(4096).optional(),
  DROVER_POD_UID: z
    .string()
    .regex(/^[a-z0-9-]{1,63}$/, "must be a Kubernetes UID")
    .optional(),
});

export interface RuntimeConfig {
  readonly runtimeInstanceId: RuntimeInstanceId;
  readonly controlPlaneId: ControlPlaneId;
  readonly tenantId?: TenantId;
  readonly sizing: RuntimeSizing;
  readonly commandToken: string;
  readonly natsUrl: string;
  readonly natsCreds?: string;
  readonly transport: Transport;
  readonly bindHost: string;
  readonly port: number;
  readonly streamTag?: string;
  readonly heartbeatMs: number;
  /** A SIGTERM drain's bound while NATS is unreachable (shell/stop.ts). */
  readonly stopBudgetMs: number;
  readonly llmBaseUrl?: string;
  readonly egress: EgressByTenant;
  readonly podUid?: string;
  readonly worker?: { readonly module: string; readonly kinds: readonly string[] };
  readonly secretsFile?: string;
}

export type ConfigResult =
  { readonly ok: true; readonly config: RuntimeConfig } | { readonly ok: false; readonly problems: readonly string[] };

/**
 * Parses the environment into a RuntimeConfig. Empty strings count as unset (a shell `X=` is not a
 * value). Never throws: a bad or missing variable yields one problem per variable, each naming it
 * and never echoing the command token.
 */
export function parseRuntimeConfig(env: Readonly<Record<string, string | undefined>>): ConfigResult {
  const cleaned = Object.fromEntries(Object.keys(RuntimeEnv.shape).map((k) => [k, env[k] === "" ? undefined : env[k]]));
  const r = RuntimeEnv.safeParse(cleaned);
  if (!r.success) {
    const problems = r.error.issues.map((i) => {
      const name = String(i.path[0] ?? "(environment)");
      return env[name] === undefined || env[name] === ""
        ? `${name} is required: ${i.message}`
        : `${name} is invalid: ${i.message}`;
    });
    return { ok: false, problems };
  }
  const e = r.data;
  return {
    ok: true,
    config: {
      runtimeInstanceId: e.DROVER_RUNTIME_INSTANCE_ID,
      controlPlaneId: e.DROVER_CONTROL_PLANE_ID,
      tenantId: e.DROVER_TENANT_ID,
      sizing: {
        workers: e.DROVER_WORKERS,
        maxConcurrentRuns: e.DROVER_MAX_CONCURRENT_RUNS,
        localQueueCapacity: e.DROVER_LOCAL_QUEUE_CAPACITY,
        maxWorkersPerRun: e.DROVER_MAX_WORKERS_PER_RUN,
      },
      commandToken: e.DROVER_COMMAND_TOKEN,
      natsUrl: e.NATS_URL,
      ...(e.NATS_CREDS ? { natsCreds: e.NATS_CREDS } : {}),
      transport: e.DROVER_TRANSPORT,
      bindHost: e.DROVER_BIND_HOST,
      port: e.DROVER_PORT,
      streamTag: e.DROVER_STREAM_TAG,
      heartbeatMs: e.DROVER_HEARTBEAT_MS,
      stopBudgetMs: e.DROVER_RUNTIME_STOP_BUDGET_MS,
      llmBaseUrl: e.DROVER_LLM_BASE_URL,
      egress: e.DROVER_EGRESS ?? {},
      podUid: e.DROVER_POD_UID,
      ...(e.DROVER_WORKER_MODULE
        ? { worker: { module: e.DROVER_WORKER_MODULE, kinds: e.DROVER_WORKER_KINDS?.split(",") ?? [] } }
        : {}),
      ...(e.DROVER_SECRETS_FILE ? { secretsFile: e.DROVER_SECRETS_FILE } : {}),
    },
  };
}
