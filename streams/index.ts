/** drover's streams: definitions as code, subjects, the event store over JetStream, consumer and projection runners. */
export { DEFAULT_LAYOUT, taggedLayout, type StreamLayout } from "./layout.ts";
export {
  aggregateSubject,
  aggregateWildcard,
  eventSubject,
  eventTypeFilter,
  tenantFilter,
  heartbeatSubject,
  runRef,
  execRef,
  scaleOutRef,
  forensicsRef,
  scheduleRef,
  flowKeyRef,
  runtimeQuotaRef,
  workerDeploysRef,
  runtimeRef,
  type AggregateRef,
} from "./subjects.ts";
export type {
  EventStore,
  StoredEvent,
  Appended,
  AppendOptions,
  BatchEntry,
  AggregateHistory,
  ReplayFrom,
  Undecodable,
} from "./types.ts";
export {
  eventStreamConfig,
  heartbeatStreamConfig,
  deadLetterStreamConfig,
  deadLetterSubjects,
  streamConfigs,
  MIN_DUPLICATE_WINDOW_MS,
  HEARTBEATS_PER_RUNTIME,
  HEARTBEAT_MAX_AGE_MS,
  type StreamOptions,
} from "./definitions.ts";
export { ensureStreams, ensureStreamsPatiently, configDifferences, type EnsureOptions } from "./ensure-streams.ts";
export {
  DEFAULT_STREAM_LIMITS,
  LIMIT_FIELDS,
  eventCompactionFromEnv,
  streamLimits,
  streamLimitsFromEnv,
  type StreamLimits,
} from "./limits.ts";
export { streamReplicas, MAX_STREAM_REPLICAS } from "./replicas.ts";
export { MIN_SERVER_VERSION, assertServerVersion, compareVersions, parseServerVersion } from "./server-version.ts";
export { createEventStore, type EventStoreOptions } from "./event-store.ts";
export { defaultMsgId, nthMsgId } from "./msg-ids.ts";
export { connectionOf, type NatsHandle } from "./connection.ts";
export { fold } from "./fold.ts";
export { memoryCheckpointStore, type CheckpointStore } from "./checkpoints.ts";
export {
  createProjectionRunner,
  type Projection,
  type ProjectionRunner,
  type ProjectionRunnerOptions,
} from "./projection-runner.ts";
export { outcomeOf, DEFAULT_BACKOFF_MS, LIVE_CONSUME, type Outcome, type RetryPolicy } from "./consumer-outcome.ts";
export {
  ensureConsumer,
  runConsumer,
  durableConsumerConfig,
  type DurableConsumerSpec,
  type ConsumerRunner,
  type ConsumerRunnerOptions,
  type EventHandler,
  type DeliveryContext,
} from "./consumer-runner.ts";
export { readDeadLetters, parseDeadLetter, type DeadLetter } from "./dead-letters.ts";
export { skipRecorder, type Skip, type SkipRecorder } from "./skip.ts";
export { lastHeartbeatMessage, storedHeartbeat } from "./heartbeat-message.ts";
export { startHistoryResponder, HISTORY_QUEUE, type HistoryResponderOptions } from "./history-responder.ts";
export { historyPrefixOf } from "./history-page.ts";
