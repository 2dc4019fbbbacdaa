/** The runtime group of the error catalogue (contracts/errors.ts spreads it in its place). */
import type { CatalogueEntry } from "./errors.ts";

export const RUNTIME_ERRORS = {
  "runtime-misdirected": {
    retryable: false,
    httpStatus: 421,
    summary: "the routing header or target id is not this runtime",
  },
  "command-unauthorized": {
    retryable: false,
    httpStatus: 401,
    summary: "the runtime command lacks the instance token",
  },
  "local-queue-full": { retryable: true, httpStatus: 429, summary: "the runtime's local queue is at capacity" },
  "execution-ownership-lost": {
    retryable: false,
    httpStatus: 409,
    summary: "another owner appended to this execution; this writer stops",
  },
  "step-attempts-exhausted": {
    retryable: false,
    httpStatus: 422,
    summary: "a step failed on every attempt its retry policy allows",
  },
  "runtime-draining": { retryable: true, httpStatus: 503, summary: "the runtime is draining and takes no new runs" },
  "resume-epoch-mismatch": {
    retryable: false,
    httpStatus: 409,
    summary: "ResumeExecution's epoch is not the journal's pending recovery epoch",
  },
  "step-timeout": { retryable: true, httpStatus: 504, summary: "a step attempt ran longer than its timeoutMs" },
  "run-deadline-exceeded": {
    retryable: false,
    httpStatus: 504,
    summary: "the run's execution ran longer than its DAG's deadlineMs",
  },
  "step-non-retryable": {
    retryable: false,
    httpStatus: 422,
    summary: "a step handler failed with a non-retryable error; no further attempt is made",
  },
  "step-output-too-large": {
    retryable: false,
    httpStatus: 422,
    summary: "a step's output is not JSON or is larger than the output limit",
  },
  "secret-in-output": {
    retryable: false,
    httpStatus: 422,
    summary: "a step's output contains the value of a secret; it is not recorded",
  },
  "reference-unresolved": {
    retryable: false,
    httpStatus: 422,
    summary: "a $ref in a step's params names nothing in the run input or the dependency's output",
  },
  "secret-unavailable": {
    retryable: false,
    httpStatus: 422,
    summary: "a $secret names a secret the tenant's secret source does not hold",
  },
  "worker-invalid": {
    retryable: false,
    httpStatus: 500,
    summary: "the tenant's worker module does not load or lacks a step kind its settings declare",
  },
  "output-store-unavailable": {
    retryable: true,
    httpStatus: 503,
    summary: "the JetStream Object Store holding large outputs did not answer, or held other bytes",
  },
  "egress-denied": {
    retryable: false,
    httpStatus: 403,
    summary: "an http or llm step's destination is not allowed by the tenant's egress policy",
  },
  "response-too-large": {
    retryable: false,
    httpStatus: 502,
    summary: "an http or llm step's response body is larger than the tenant's egress.maxResponseBytes",
  },
  "too-many-redirects": {
    retryable: false,
    httpStatus: 502,
    summary: "an http or llm step was redirected more than 5 times",
  },
  "condition-error": {
    retryable: false,
    httpStatus: 422,
    summary: "a step's when condition failed to evaluate over the run input and its dependencies' outputs",
  },
  "child-run-failed": {
    retryable: true,
    httpStatus: 422,
    summary: "a run step's child run failed, was cancelled or was rejected (the detail names the child run)",
  },
  "map-too-large": {
    retryable: false,
    httpStatus: 422,
    summary: "a map step's array has more items than the runtime's bound (10 000; not configurable yet)",
  },
  "map-source-invalid": {
    retryable: false,
    httpStatus: 422,
    summary: "a map step's map.over does not resolve to an array",
  },
  "map-failures-exceeded": {
    retryable: false,
    httpStatus: 422,
    summary: "more items of a map step failed than its toleratedFailures allows",
  },
  "wait-timeout": {
    retryable: false,
    httpStatus: 422,
    summary: "a wait step's timeoutMs passed with no signal and its onTimeout is fail",
  },
  "wait-already-signalled": {
    retryable: false,
    httpStatus: 409,
    summary: "the run's wait already has a signal of this name (with another or no signal id)",
  },
} as const satisfies Record<string, CatalogueEntry>;
