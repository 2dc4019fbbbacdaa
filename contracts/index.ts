/** drover's contracts: every schema that crosses a process boundary, the codec and the error catalogue. */
export {
  ID_MAX_LENGTH,
  ID_PATTERN,
  isSubjectSafeId,
  TenantId,
  TenantGroupId,
  SharedRunId,
  LocalRunId,
  ExecutionId,
  RuntimeInstanceId,
  ScaleOutRequestId,
  ScheduleId,
  RuntimeFailureIncidentId,
  ControlPlaneId,
  StepId,
  EventId,
  ForensicsId,
  HostIncarnation,
  FORENSICS_ID_PATTERN,
  inFlightForensicsId,
  localQueuedForensicsId,
} from "./ids.ts";
export {
  DEFAULT_MAX_RESPONSE_BYTES,
  EgressByTenant,
  EgressSettings,
  parseEgressRule,
  type EgressRule,
} from "./egress.ts";
export {
  ERROR_CATALOGUE,
  ERROR_CODES,
  DroverError,
  isDroverError,
  isErrorCode,
  type ErrorCode,
  type CatalogueEntry,
} from "./errors.ts";
export { Writer, EnvelopeBase } from "./envelope.ts";
export { buildEvent, type EventDraft, type EventOrigin, type EventStamp } from "./build-event.ts";
export { Reason, ReasonCode } from "./reason.ts";
export { AGGREGATES, TENANT_SCOPED_AGGREGATES, defineEvent, type Aggregate } from "./define-event.ts";
export {
  DAG_LIMITS,
  DagDefinition,
  Step,
  STEP_KINDS,
  BUILTIN_STEP_KINDS,
  HandlerName,
  requiredKindOf,
  requiredStepKinds,
  RetryPolicy,
  ComputeParams,
  FlakyParams,
  SleepParams,
  HttpParams,
  LlmParams,
  dagIssues,
  findCycle,
  type DagInput,
  type StepKind,
} from "./dag.ts";
export {
  TenantSettings,
  IsolationMode,
  HostProvider,
  Transport,
  RuntimeSizing,
  defaultTenantSettings,
  runtimePrefixOf,
  sizingOf,
  RUNTIME_PREFIX_MAX_LENGTH,
  WorkerSettings,
  WorkerVersion,
  RuntimeWorker,
  SecretSource,
  SubmissionPace,
} from "./tenant-settings.ts";
export { gcra, type GcraOutcome } from "./gcra.ts";
export {
  RefValue,
  SecretValue,
  REF_PATH,
  SECRET_NAME,
  isRef,
  isSecret,
  collectRefs,
  refIssues,
  refStep,
  lookupRef,
  resolveRefs,
  type RefScope,
} from "./step-refs.ts";
export { canonicalSize } from "./json-size.ts";
export { RUN_INPUT_MAX_BYTES, ForkOrigin } from "./events-run.ts";
export * as RunEvents from "./events-run.ts";
export * as ExecEvents from "./events-exec.ts";
export * as ScaleOutEvents from "./events-scaleout.ts";
export * as RuntimeEvents from "./events-runtime.ts";
export * as ForensicsEvents from "./events-forensics.ts";
export * as ScheduleEvents from "./events-schedule.ts";
export * as FlowKeyEvents from "./events-flowkey.ts";
export * as QuotaEvents from "./events-quota.ts";
export * as WorkerEvents from "./events-worker.ts";
export { FlowKeySettings, RunPriority, FLOW_KEY_PLACEHOLDER, MAX_FLOW_KEYS } from "./flow-control.ts";
export { OverlapPolicy, ScheduleSpec } from "./events-schedule.ts";
export {
  FenceProof,
  isPlannedStopId,
  PLANNED_STOP_PREFIX,
  PlannedStop,
  READINESS_LAYERS,
  ReadinessLayer,
  RecoveryClass,
} from "./events-runtime.ts";
export {
  Condition,
  CONDITION_MAX_CHARS,
  Trigger,
  conditionIssues,
  evaluateCondition,
  type ConditionDep,
  type ConditionResult,
} from "./condition.ts";
export {
  MAP_LIMITS,
  MAP_STEP_ID_MAX,
  MapSpec,
  ToleratedFailures,
  mapIssues,
  mapItemId,
  parseMapItemId,
  toleratedCount,
} from "./map.ts";
export {
  CACHEABLE_KINDS,
  STEP_CACHE_LIMITS,
  StepCacheKey,
  StepCacheOrigin,
  StepCacheSpec,
  cacheIssues,
} from "./step-cache.ts";
export {
  CHILD_DAG_MAX_BYTES,
  MAX_RUN_NESTING,
  OnParentCancel,
  ParentLink,
  childRunIssues,
  childRunKey,
  runNesting,
} from "./child-run.ts";
export { WAIT_LIMITS, WaitName, WaitParams, WaitResolver, mayResolve, payloadChecker, waitIssues } from "./wait.ts";
export { StepOutput, StoredOutputRef, INLINE_OUTPUT_MAX_BYTES, OUTPUT_MAX_BYTES } from "./events-exec.ts";
export {
  ALL_EVENTS,
  EVENT_DEFINITIONS,
  EVENT_TYPES,
  type DroverEvent,
  type EventType,
  type EventOf,
  type DataOf,
} from "./events.ts";
export { Heartbeat, type StoredHeartbeat } from "./heartbeat.ts";
export { CapacityRebuildReply, ForensicsRebuildReply } from "./control-replies.ts";
export {
  ROUTING_HEADER,
  TOKEN_HEADER,
  RuntimeCommand,
  RuntimeCommandResult,
  parseRuntimeCommand,
  DispatchRunPayload,
  ResumeExecutionPayload,
  QueueStatus,
  RunStatus,
  type RuntimeOperation,
} from "./runtime-commands.ts";
export {
  validate,
  encodeJson,
  decodeJson,
  parseEvent,
  encodeEvent,
  decodeEvent,
  decodeEventWithoutPayload,
  contractViolation,
  precompileEventSchemas,
} from "./codec.ts";
export { parseDag, isCheckedDag, DagMemo } from "./checked-dag.ts";
export { DroverConfig, Credential, KubernetesHostConfig, tenantSettingsOf, staleHeartbeatMsOf } from "./config.ts";
export type { Decider } from "./decider.ts";
export { assertNever } from "./assert-never.ts";
