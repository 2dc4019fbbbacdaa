import type { HostSpec } from "./types.ts";

/**
 * The environment a runtime process starts with (services/runtime/domain/runtime-config.ts names
 * each variable). `base` comes first so nothing in it can override identity, tenant, sizing, token
 * or endpoint: configuration never changes who a runtime is. The parent's environment is not
 * inherited (it may hold another tenant's or the control plane's secrets); callers pass what the
 * runtime needs to run at all (PATH, HOME) in `base`.
 */
export function runtimeEnv(
  spec: HostSpec,
  bindHost: string,
  port: number,
  base: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const env: Record<string, string> = {
    ...base,
    DROVER_RUNTIME_INSTANCE_ID: spec.runtimeInstanceId,
    DROVER_CONTROL_PLANE_ID: spec.controlPlaneId,
    DROVER_WORKERS: String(spec.sizing.workers),
    DROVER_MAX_CONCURRENT_RUNS: String(spec.sizing.maxConcurrentRuns),
    DROVER_LOCAL_QUEUE_CAPACITY: String(spec.sizing.localQueueCapacity),
    DROVER_MAX_WORKERS_PER_RUN: String(spec.sizing.maxWorkersPerRun),
    DROVER_COMMAND_TOKEN: spec.commandToken,
    NATS_URL: spec.natsUrl,
    DROVER_TRANSPORT: spec.transport,
    DROVER_BIND_HOST: bindHost,
    DROVER_PORT: String(port),
  };
  // Optional variables are removed, not set empty, so a base value cannot leak through either.
  const optional: Record<string, string | undefined> = {
    DROVER_TENANT_ID: spec.tenantId,
    DROVER_STREAM_TAG: spec.streamTag,
    DROVER_HEARTBEAT_MS: spec.heartbeatMs === undefined ? undefined : String(spec.heartbeatMs),
    DROVER_LLM_BASE_URL: spec.llmBaseUrl,
    DROVER_EGRESS: spec.egress ? JSON.stringify(spec.egress) : undefined,
    DROVER_WORKER_MODULE: spec.worker?.module,
    DROVER_WORKER_KINDS: spec.worker?.kinds.join(","),
    DROVER_SECRETS_FILE: spec.secretsFile,
    NATS_CREDS: spec.natsCreds,
    NATS_CA_FILE: spec.natsCaFile,
    DROVER_SECRETS_JSON:
      spec.secrets && Object.keys(spec.secrets).length > 0 ? JSON.stringify(spec.secrets) : undefined,
  };
  for (const [k, v] of Object.entries(optional)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  delete env.DROVER_POD_UID;
  return env;
}

/** The fields two starts of one RuntimeInstanceId must agree on to converge (token and NATS URL excluded: not identity). */
export function identityKey(spec: HostSpec): string {
  return JSON.stringify([
    spec.controlPlaneId,
    spec.runtimeInstanceId,
    spec.tenantId ?? null,
    spec.tenantGroupId ?? null,
    spec.isolationMode,
    spec.transport,
    spec.sizing.workers,
    spec.sizing.maxConcurrentRuns,
    spec.sizing.localQueueCapacity,
    spec.sizing.maxWorkersPerRun,
  ]);
}
