/** One valid example of every `exec.*` event (spread into example-events.ts's EXAMPLE_BUILDERS). */
import { ExecutionId, SharedRunId, StepId, type EventType } from "../../contracts/index.ts";
import { AT, DIGEST, envelope, forensicsIds, ids, reason, runtimeWriter, type Builders } from "./example-events.ts";

export const EXEC_BUILDERS = {
  "exec.started": () => ({
    ...envelope("exec.started"),
    tenantId: ids.tenant,
    writer: runtimeWriter,
    data: {
      sharedRunId: ids.sharedRun,
      localRunId: ids.localRun,
      runtimeInstanceId: ids.runtime,
      dagDigest: DIGEST,
      stepCount: 5,
      epoch: 0,
    },
  }),
  "exec.step-completed": () => ({
    ...envelope("exec.step-completed"),
    tenantId: ids.tenant,
    writer: runtimeWriter,
    data: {
      stepId: ids.step,
      attempt: 2,
      output: { ok: true, n: 3, note: null },
      outputDigest: DIGEST,
      durationMs: 12,
    },
  }),
  "exec.step-failed": () => ({
    ...envelope("exec.step-failed"),
    tenantId: ids.tenant,
    writer: runtimeWriter,
    data: { stepId: ids.step, attempt: 1, error: "flaky attempt 1", retryAt: AT },
  }),
  "exec.timer-started": () => ({
    ...envelope("exec.timer-started"),
    tenantId: ids.tenant,
    writer: runtimeWriter,
    data: { stepId: ids.step, attempt: 1, durationMs: 60_000, wakeAt: AT },
  }),
  "exec.condition-evaluated": () => ({
    ...envelope("exec.condition-evaluated"),
    tenantId: ids.tenant,
    writer: runtimeWriter,
    data: { stepId: ids.step, result: false },
  }),
  "exec.step-skipped": () => ({
    ...envelope("exec.step-skipped"),
    tenantId: ids.tenant,
    writer: runtimeWriter,
    data: { stepId: ids.step, reason: "condition-false", detail: 'condition was false: input.region == "eu"' },
  }),
  "exec.map-expanded": () => ({
    ...envelope("exec.map-expanded"),
    tenantId: ids.tenant,
    writer: runtimeWriter,
    data: { stepId: ids.step, count: 20, itemsDigest: "c".repeat(64), maxConcurrency: 3, toleratedFailures: 2 },
  }),
  "exec.child-run-submitted": () => ({
    ...envelope("exec.child-run-submitted"),
    tenantId: ids.tenant,
    writer: runtimeWriter,
    data: { stepId: ids.step, attempt: 1, childRunId: SharedRunId.parse("run-0002") },
  }),
  "exec.wait-opened": () => ({
    ...envelope("exec.wait-opened"),
    tenantId: ids.tenant,
    writer: runtimeWriter,
    data: { stepId: ids.step, name: "approval", timeoutAt: "2026-01-01T00:00:00.000Z" },
  }),
  "exec.wait-resolved": () => ({
    ...envelope("exec.wait-resolved"),
    tenantId: ids.tenant,
    writer: runtimeWriter,
    data: {
      stepId: ids.step,
      name: "approval",
      by: "signal",
      principal: "tenant:acme",
      payloadDigest: "d".repeat(64),
      signalSeq: 7,
    },
  }),
  "exec.step-reused": () => ({
    ...envelope("exec.step-reused"),
    tenantId: ids.tenant,
    writer: runtimeWriter,
    data: {
      stepId: StepId.parse("a"),
      fromRun: SharedRunId.parse("run-0000"),
      fromExecutionId: ExecutionId.parse("ex-0000"),
      output: { n: 1 },
      outputDigest: "c".repeat(64),
    },
  }),
  "exec.paused-for-recovery": () => ({
    ...envelope("exec.paused-for-recovery"),
    tenantId: ids.tenant,
    data: {
      forensicsId: forensicsIds.inFlight,
      incidentId: ids.incident,
      failedRuntimeInstanceId: ids.runtime,
      newEpoch: 1,
    },
  }),
  "exec.resumed": () => ({
    ...envelope("exec.resumed"),
    tenantId: ids.tenant,
    writer: { ...runtimeWriter, runtimeInstanceId: ids.replacementRuntime, epoch: 1 },
    data: {
      runtimeInstanceId: ids.replacementRuntime,
      localRunId: ids.replacementLocalRun,
      epoch: 1,
      completedSteps: 2,
    },
  }),
  "exec.completed": () => ({
    ...envelope("exec.completed"),
    tenantId: ids.tenant,
    writer: runtimeWriter,
    data: { outputDigest: DIGEST },
  }),
  "exec.failed": () => ({
    ...envelope("exec.failed"),
    tenantId: ids.tenant,
    writer: runtimeWriter,
    data: { reason: reason("step-attempts-exhausted"), stepId: ids.step },
  }),
  "exec.cancelled": () => ({
    ...envelope("exec.cancelled"),
    tenantId: ids.tenant,
    writer: runtimeWriter,
    data: { reason: "run cancelled" },
  }),
} satisfies Pick<Builders, Extract<EventType, `exec.${string}`>>;
