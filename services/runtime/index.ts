/**
 * The runtime instance service (runtime.md). The process entry point is main.ts; these exports are
 * for this service's tests and tools. Other services never import them (lint): they command a
 * runtime through platform/runtime-client.ts and read its journal through streams/.
 */
export { parseRuntimeConfig, RuntimeEnv, type RuntimeConfig, type ConfigResult } from "./domain/runtime-config.ts";
export {
  scheduleSteps,
  retryAtAfterFailure,
  topologicalLevels,
  type ScheduleDecision,
  type StepProgress,
  type StepStart,
} from "../../aggregates/scheduler.ts";
export {
  foldExecution,
  evolveExecution,
  initialExecutionState,
  isExecEvent,
  type ExecutionState,
  type CompletedStep,
  type SequencedEvent,
  type ExecEvent,
} from "../../aggregates/execution.ts";
export {
  admitRun,
  availableSlots,
  freeRunSlots,
  runsToStart,
  type Admission,
  type QueueFacts,
} from "./domain/local-queue.ts";
export { canonicalJson, stepInputs, flakyFails } from "../../aggregates/step-inputs.ts";
export {
  executionIdFor,
  dagDigest,
  openFresh,
  openResume,
  checkResumable,
  checkResume,
  checkDispatched,
  type JournalEnv,
  type OpenedExecution,
} from "./shell/execution-open.ts";
export { Execution, type ExecutionOutcome, type ExecutorEnv } from "./shell/execution.ts";
export { AggregateJournal } from "./shell/journal.ts";
export { RuntimeInstance } from "./shell/runtime-instance.ts";
export {
  createCommandHandler,
  type CommandHandler,
  type CommandAnswer,
  type IncomingCommand,
} from "./shell/command-handler.ts";
export { HeartbeatPublisher } from "./shell/heartbeat.ts";
export { natsSignalFeeds, type SignalFeeds, type SignalWatch } from "./shell/signal-feed.ts";
export { runStep, sha256Hex, type StepRunner, type StepContext } from "./shell/step-runners.ts";
export { WorkerPool } from "./shell/worker-pool.ts";
export { startHttpServer } from "./http/server.ts";
export { startGrpcServer } from "./grpc/server.ts";
