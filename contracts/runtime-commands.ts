import { z } from "zod";
import { DagDefinition } from "./dag.ts";
import type { DagMemo } from "./checked-dag.ts";
import { ExecutionId, HostIncarnation, LocalRunId, RuntimeInstanceId, SharedRunId, TenantId } from "./ids.ts";
import { ReasonCode } from "./reason.ts";
import { ForkOrigin } from "./events-run.ts";

/** The header a shared gateway routes on; a runtime refuses a command whose header is not its own id. */
export const ROUTING_HEADER = "x-drover-runtime-instance-id";
/** The per-instance command token header (HTTP) / metadata key (gRPC). */
export const TOKEN_HEADER = "x-drover-runtime-token";

export const DispatchRunPayload = z
  .object({
    sharedRunId: SharedRunId,
    localRunId: LocalRunId,
    tenantId: TenantId,
    dag: DagDefinition,
    input: z.json().optional().describe("the run's input (run `submitted`), resolved by `$ref: input`"),
    fork: ForkOrigin.optional().describe("a fork's origin (run `submitted`): the steps whose outputs it reuses"),
    dispatchedSeq: z
      .number()
      .int()
      .positive()
      .describe("stream sequence of the run's `dispatched` event; run `started` is appended expecting it"),
    correlationId: z.string().min(1).max(128),
  })
  .strict();
export const ResumeExecutionPayload = DispatchRunPayload.extend({
  executionId: ExecutionId,
  epoch: z.number().int().positive(),
}).strict();
const byLocalRun = z.object({ localRunId: LocalRunId }).strict();
const empty = z.object({}).strict();

const common = {
  runtimeInstanceId: RuntimeInstanceId.describe("the exact target"),
  correlationId: z.string().min(1).max(128),
};
const cmd = <O extends string, P extends z.ZodType>(operation: O, payload: P) =>
  z.object({ operation: z.literal(operation), payload, ...common }).strict();

/** One command envelope for both transports (runtime.md "Command API"). */
export const RuntimeCommand = z.discriminatedUnion("operation", [
  cmd("DispatchRun", DispatchRunPayload),
  cmd("ResumeExecution", ResumeExecutionPayload),
  cmd("GetRunStatus", byLocalRun),
  cmd("GetQueueStatus", empty),
  cmd("PauseQueue", empty),
  cmd("ResumeQueue", empty),
  cmd("CancelRun", byLocalRun),
  cmd("Drain", empty),
]);
export type RuntimeCommand = z.infer<typeof RuntimeCommand>;
export type RuntimeOperation = RuntimeCommand["operation"];

export const QueueStatus = z
  .object({
    hostIncarnation: HostIncarnation,
    queuedRuns: z.number().int().nonnegative(),
    runningRuns: z.number().int().nonnegative(),
    parkedRuns: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe("executions parked on their waits: accepted, not ended, holding no run slot (docs/control-flow.md)"),
    availableSlots: z.number().int().nonnegative(),
    workers: z.number().int().nonnegative(),
    availableWorkers: z.number().int().nonnegative(),
    paused: z.boolean(),
    draining: z.boolean(),
  })
  .strict();
export const RunStatus = z
  .object({
    localRunId: LocalRunId,
    state: z.enum(["queued", "running", "completed", "failed", "cancelled", "unknown"]),
    executionId: ExecutionId.optional(),
    completedSteps: z.number().int().nonnegative().optional(),
    failureReason: ReasonCode.optional().describe(
      "why a failed or cancelled run stopped, e.g. execution-ownership-lost",
    ),
    failureDetail: z.string().max(2000).optional(),
  })
  .strict();

/** Every response names the responder; callers treat a mismatch with their target as `runtime-identity-mismatch`. */
export const RuntimeCommandResult = z
  .object({
    success: z.boolean(),
    operation: z.string(),
    runtimeInstanceId: RuntimeInstanceId.describe("the responder"),
    hostIncarnation: HostIncarnation,
    payload: z.record(z.string(), z.unknown()).default({}),
    failureReason: ReasonCode.optional(),
    failureDetail: z.string().max(2000).optional(),
    timings: z.object({ receivedAt: z.iso.datetime(), handledMs: z.number().nonnegative() }).strict(),
  })
  .strict();
export type RuntimeCommandResult = z.infer<typeof RuntimeCommandResult>;

/** A DispatchRun or ResumeExecution with its DAG unchecked: every other field as `RuntimeCommand` checks it. */
const withAnyDag = {
  DispatchRun: cmd("DispatchRun", DispatchRunPayload.extend({ dag: z.unknown() }).strict()),
  ResumeExecution: cmd("ResumeExecution", ResumeExecutionPayload.extend({ dag: z.unknown() }).strict()),
};

/**
 * `RuntimeCommand.safeParse`, with a DispatchRun's or ResumeExecution's DAG checked through `dags`
 * (checked-dag.ts `DagMemo`): a runtime is dispatched the same DAG run after run, and its full check
 * (zod plus `dagIssues`) was most of a command's parse (~50 µs of ~60 for a 10-step chain, ~130 of
 * ~200 for 50 steps). The answer is the full parse's: a DAG the memo accepts is one `DagDefinition`
 * accepts (the memo's own check), every other field is checked as the full schema checks it, and
 * anything refused is parsed again in full, so a refusal carries the full parse's issues. The DAG of
 * an accepted command is the memo's checked (frozen) object, shared by equal DAGs.
 */
export function parseRuntimeCommand(body: unknown, dags: DagMemo): z.ZodSafeParseResult<RuntimeCommand> {
  const b = body as { operation?: unknown; payload?: unknown } | null;
  const op = b?.operation;
  if ((op === "DispatchRun" || op === "ResumeExecution") && typeof b!.payload === "object" && b!.payload !== null) {
    const dag = dags.check((b!.payload as { dag?: unknown }).dag);
    const rest = dag && withAnyDag[op].safeParse(body);
    if (rest?.success) {
      rest.data.payload.dag = dag;
      return rest as z.ZodSafeParseResult<RuntimeCommand>;
    }
  }
  return RuntimeCommand.safeParse(body);
}
