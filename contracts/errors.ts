/**
 * The error catalogue: every typed error and structured failure reason drover emits, with its
 * stable kebab-case code, whether a retry can help, and the HTTP status the API maps it to.
 * `docs/errors.md` documents each code; a unit test keeps the two in sync. Never reuse a code for a
 * different meaning; add new ones at the end of their group.
 */
import { RUNTIME_ERRORS } from "./runtime-errors.ts";

export interface CatalogueEntry {
  readonly retryable: boolean;
  readonly httpStatus: number;
  readonly summary: string;
}

export const ERROR_CATALOGUE = {
  // --- contracts and API input ---
  "contract-violation": { retryable: false, httpStatus: 400, summary: "a message or body does not match its schema" },
  "invalid-id": {
    retryable: false,
    httpStatus: 400,
    summary: "an id is not lowercase [a-z0-9-] of at most 63 characters",
  },
  "dag-invalid": { retryable: false, httpStatus: 400, summary: "a DAG definition breaks a validation rule" },
  unauthenticated: { retryable: false, httpStatus: 401, summary: "no or unknown bearer token" },
  forbidden: { retryable: false, httpStatus: 403, summary: "the credential may not perform this operation" },
  "not-found": { retryable: false, httpStatus: 404, summary: "no such resource visible to the caller" },
  "step-kind-not-offered": {
    retryable: false,
    httpStatus: 422,
    summary: "the DAG uses a custom step kind the tenant's worker settings can never offer",
  },
  "tenant-queue-full": {
    retryable: true,
    httpStatus: 429,
    summary: "the tenant has maxQueuedRuns runs submitted and not yet started",
  },
  "rate-limited": {
    retryable: true,
    httpStatus: 429,
    summary: "the credential sent more requests than its rate limit",
  },
  "submission-rate-limited": {
    retryable: true,
    httpStatus: 429,
    summary: "the tenant's queue is deep and its submissions came faster than its submission pace",
  },
  "too-many-event-feeds": {
    retryable: true,
    httpStatus: 429,
    summary: "the credential has as many live event feeds open as it may",
  },
  "schedule-invalid": {
    retryable: false,
    httpStatus: 400,
    summary: "a schedule's cron expression, time zone or range is invalid, or it could never fire",
  },
  // --- event store ---
  "version-conflict": { retryable: true, httpStatus: 409, summary: "the aggregate moved past the expected sequence" },
  "event-store-unavailable": { retryable: true, httpStatus: 503, summary: "JetStream did not answer in time" },
  "server-version-unsupported": { retryable: false, httpStatus: 500, summary: "nats-server is older than 2.12" },
  "batch-rejected": {
    retryable: false,
    httpStatus: 500,
    summary: "an atomic batch was refused and nothing was stored",
  },
  // --- host start and readiness (hosts.md) ---
  "host-config-missing": { retryable: false, httpStatus: 500, summary: "the host strategy lacks configuration" },
  "host-spec-invalid": { retryable: false, httpStatus: 400, summary: "the host spec is invalid" },
  "host-creation-failed": { retryable: true, httpStatus: 502, summary: "the host resource could not be created" },
  "host-identity-collision": {
    retryable: false,
    httpStatus: 409,
    summary: "an existing resource with the name has another identity",
  },
  "process-exited-during-startup": {
    retryable: true,
    httpStatus: 502,
    summary: "the runtime process exited before readiness",
  },
  "pod-readiness-timeout": { retryable: true, httpStatus: 504, summary: "the Pod did not become Ready in time" },
  "pod-failed": { retryable: true, httpStatus: 502, summary: "the Pod failed" },
  "endpoint-resolution-failed": {
    retryable: true,
    httpStatus: 502,
    summary: "no endpoint could be resolved for the runtime",
  },
  "port-forward-startup-failed": { retryable: true, httpStatus: 502, summary: "the port-forward bridge did not start" },
  "runtime-command-readiness-failed": {
    retryable: true,
    httpStatus: 502,
    summary: "a real command did not reach the runtime",
  },
  "runtime-identity-mismatch": {
    retryable: false,
    httpStatus: 502,
    summary: "the responder is not the runtime that was targeted",
  },
  "gateway-not-ready": { retryable: true, httpStatus: 503, summary: "the Gateway is missing or not Programmed" },
  "route-not-accepted": {
    retryable: true,
    httpStatus: 503,
    summary: "the route is not Accepted/ResolvedRefs at its generation",
  },
  "route-probe-identity-mismatch": {
    retryable: false,
    httpStatus: 502,
    summary: "a probe through the route reached another runtime",
  },
  "node-port-probe-identity-mismatch": {
    retryable: false,
    httpStatus: 502,
    summary: "a probe through the runtime's NodePort Service reached another runtime",
  },
  "port-forward-probe-identity-mismatch": {
    retryable: false,
    httpStatus: 502,
    summary: "a probe through the runtime's pods/portforward tunnel reached another runtime",
  },
  "capacity-publication-failed": {
    retryable: true,
    httpStatus: 503,
    summary: "endpoint or capacity could not be published",
  },
  "host-start-abandoned": {
    retryable: true,
    httpStatus: 503,
    summary: "the provisioner driving a host start stopped before proving it; a later attempt cleaned it up",
  },
  "scale-out-deliveries-exhausted": {
    retryable: true,
    httpStatus: 503,
    summary: "every delivery of the scale-out request failed; the provisioner closed it",
  },
  // --- admission and dispatch ---
  "http-endpoint-missing": { retryable: true, httpStatus: 503, summary: "an HTTP runtime has no published endpoint" },
  "grpc-endpoint-missing": { retryable: true, httpStatus: 503, summary: "a gRPC runtime has no published endpoint" },
  "runtime-unreachable": { retryable: true, httpStatus: 502, summary: "the runtime did not answer over its transport" },
  "dispatch-timeout": { retryable: true, httpStatus: 504, summary: "the dispatch command timed out" },
  "no-visible-capacity": {
    retryable: true,
    httpStatus: 503,
    summary: "no capacity visible to the tenant can accept the run",
  },
  "queue-stalled": {
    retryable: true,
    httpStatus: 503,
    summary: "queued past the stall bound with no visible capacity and no scale-out in progress; re-planned",
  },
  "tenant-quota-exceeded": { retryable: true, httpStatus: 429, summary: "the tenant is at its concurrent-run quota" },
  "waiting-for-key": {
    retryable: true,
    httpStatus: 429,
    summary: "the run's flow key is at its concurrency limit (or a higher-priority run waits for it)",
  },
  "key-rate-limited": {
    retryable: true,
    httpStatus: 429,
    summary: "the run's flow key is at its rate limit until a time",
  },
  "step-kind-unavailable": {
    retryable: true,
    httpStatus: 503,
    summary: "no runtime visible to the tenant offers every step kind of the run's DAG",
  },
  "crash-loop": {
    retryable: false,
    httpStatus: 422,
    summary:
      "the run's execution crashed its runtime more often than the tenant's maxCrashRecoveries; not resumed again",
  },
  "scale-out-limit-reached": {
    retryable: true,
    httpStatus: 503,
    summary: "the tenant is at its runtime-instance limit",
  },
  "decision-not-applicable": {
    retryable: false,
    httpStatus: 409,
    summary: "an admission decision does not apply to the run's current state; it is dropped",
  },
  // --- runtime ---
  ...RUNTIME_ERRORS,
  // --- health, fencing, recovery ---
  "heartbeat-stale": { retryable: false, httpStatus: 503, summary: "no fresh heartbeat within the staleness bound" },
  "host-exited": { retryable: false, httpStatus: 503, summary: "the runtime process exited" },
  "connection-lost": {
    retryable: false,
    httpStatus: 503,
    summary: "the runtime's NATS connection closed and its command endpoint refused a connection",
  },
  "host-stopped": {
    retryable: false,
    httpStatus: 503,
    summary: "the runtime's host was stopped on purpose (its provisioner stopped); not a failure",
  },
  "pod-deleted": {
    retryable: false,
    httpStatus: 503,
    summary: "the runtime Pod was deleted or its container terminated",
  },
  "fence-timeout": {
    retryable: true,
    httpStatus: 504,
    summary: "the host boundary could not be proven in time; no work moves",
  },
  "host-out-of-reach": {
    retryable: false,
    httpStatus: 502,
    summary: "the fencer cannot see the host (a process host of another machine or PID namespace); no work moves",
  },
  // --- read models ---
  "read-model-unavailable": {
    retryable: true,
    httpStatus: 503,
    summary: "the forensics read models (MongoDB) are not configured or not reachable",
  },
  // --- run operations ---
  "run-terminal": {
    retryable: false,
    httpStatus: 409,
    summary: "the run has already ended (completed, failed, cancelled or rejected); details.status says how",
  },
  "fork-invalid": {
    retryable: false,
    httpStatus: 400,
    summary: "a fork's fromStep is not in the run's DAG, or its patched input is not a valid run input",
  },
  "run-not-ended": {
    retryable: true,
    httpStatus: 409,
    summary: "the run is still in flight; only an ended run can be forked (details.status)",
  },
  "fork-upstream-incomplete": {
    retryable: false,
    httpStatus: 409,
    summary: "steps upstream of a fork's fromStep did not complete in the original run (details.steps names them)",
  },
  "run-not-pinned": {
    retryable: true,
    httpStatus: 409,
    summary: "the run has not started, so it is pinned to no worker version yet and cannot be upgraded",
  },
  "worker-version-unknown": {
    retryable: false,
    httpStatus: 422,
    summary: "no runtime of the tenant ever registered the target worker version (or the tenant has no current one)",
  },
  "worker-version-not-newer": {
    retryable: false,
    httpStatus: 409,
    summary: "the target worker version was deployed before the version the run is pinned to",
  },
  "upgrade-missing-kinds": {
    retryable: false,
    httpStatus: 409,
    summary: "the target worker version lacks step kinds the run's remaining steps need (details.missingKinds)",
  },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;
export const ERROR_CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_CATALOGUE, value);
}

/**
 * Base of every typed error. `code` is stable and documented; `retryable` comes from the catalogue
 * unless overridden; `details` carries structured context (never secrets).
 */
export class DroverError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { cause?: unknown; details?: Record<string, unknown>; retryable?: boolean } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "DroverError";
    this.code = code;
    this.retryable = opts.retryable ?? ERROR_CATALOGUE[code].retryable;
    this.details = opts.details ?? {};
  }

  toJSON(): { code: ErrorCode; message: string; retryable: boolean; details: Readonly<Record<string, unknown>> } {
    return { code: this.code, message: this.message, retryable: this.retryable, details: this.details };
  }
}

export function isDroverError(e: unknown, code?: ErrorCode): e is DroverError {
  return e instanceof DroverError && (code === undefined || e.code === code);
}
