/**
 * One valid example of every event type in the catalogue, for tests of the codec, the event store,
 * folds and projections. `EXAMPLE_BUILDERS` is typed by `EventType`, so adding an event to the
 * catalogue without an example here fails the typecheck.
 */
import {
  ControlPlaneId,
  DagDefinition,
  EventId,
  ExecutionId,
  HostIncarnation,
  LocalRunId,
  RuntimeFailureIncidentId,
  RuntimeInstanceId,
  ScaleOutRequestId,
  SharedRunId,
  StepId,
  TenantId,
  inFlightForensicsId,
  localQueuedForensicsId,
  type DagInput,
  type DroverEvent,
  type ErrorCode,
  type EventOf,
  type EventType,
  type Reason,
} from "../../contracts/index.ts";
import { EXEC_BUILDERS } from "./example-exec-events.ts";
import { FORENSICS_BUILDERS } from "./example-forensics-events.ts";
import { RUNTIME_BUILDERS } from "./example-runtime-events.ts";
import { SCHEDULE_BUILDERS } from "./example-schedule-events.ts";

/** Fixed, valid ids shared by the examples (and handy for other tests). */
export const ids = {
  tenant: TenantId.parse("tenant-a"),
  sharedRun: SharedRunId.parse("run-0001"),
  localRun: LocalRunId.parse("lr-0001"),
  replacementLocalRun: LocalRunId.parse("lr-0002"),
  execution: ExecutionId.parse("ex-0001"),
  runtime: RuntimeInstanceId.parse("rt-tenant-a-0001"),
  replacementRuntime: RuntimeInstanceId.parse("rt-tenant-a-0002"),
  incident: RuntimeFailureIncidentId.parse("inc-0001"),
  scaleOut: ScaleOutRequestId.parse("so-0001"),
  controlPlane: ControlPlaneId.parse("cp-test"),
  step: StepId.parse("b"),
  host: HostIncarnation.parse("pid:4242:987654"),
  pod: HostIncarnation.parse("pod:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"),
};
export const forensicsIds = {
  inFlight: inFlightForensicsId(ids.execution, ids.sharedRun, ids.localRun),
  localQueued: localQueuedForensicsId(ids.sharedRun, ids.localRun),
};

export const DIGEST = "a".repeat(64);
export const AT = "2026-01-02T03:04:05.678Z";

export const exampleDagInput: DagInput = {
  name: "example",
  steps: [
    { id: "a", kind: "compute", params: { durationMs: 5 } },
    { id: "b", kind: "flaky", dependsOn: ["a"], params: { failAttempts: 1 }, retry: { maxAttempts: 3, backoffMs: 10 } },
    { id: "c", kind: "sleep", dependsOn: ["a"], params: { durationMs: 10 } },
    {
      id: "d",
      kind: "http",
      dependsOn: ["b", "c"],
      params: { url: "http://127.0.0.1:8080/hook", method: "POST", body: "{}" },
    },
    { id: "e", kind: "llm", dependsOn: ["d"], params: { model: "tiny", prompt: "summarise" } },
  ],
};
export const exampleDag = DagDefinition.parse(exampleDagInput);

/** A runtime command's target and a DispatchRun's payload over the example ids and DAG (contracts tests). */
export const exampleCommandTarget = { runtimeInstanceId: ids.runtime, correlationId: "corr-1" };
export const exampleDispatchPayload = {
  sharedRunId: ids.sharedRun,
  localRunId: ids.localRun,
  tenantId: ids.tenant,
  dag: exampleDagInput,
  dispatchedSeq: 17,
  correlationId: "corr-1",
};

export const reason = (code: ErrorCode, detail = ""): Reason => ({ code, detail });

/** The envelope fields of an example; `tenantId` only for tenant-scoped aggregates (not `runtime.*`). */
export function envelope<T extends EventType>(type: T, n = 1) {
  const tenantScoped = !type.startsWith("runtime.");
  return {
    eventId: EventId.parse(`ev-${type.replace(".", "-")}-${n}`),
    type,
    schemaVersion: 1 as const,
    occurredAt: AT,
    ...(tenantScoped ? { tenantId: ids.tenant } : {}),
    correlationId: ids.sharedRun as string,
    causationId: "cmd-0001",
    writer: { service: "test" as const, instanceId: "test-1" },
  };
}

export const runtimeWriter = {
  service: "runtime" as const,
  instanceId: "rt-proc-1",
  runtimeInstanceId: ids.runtime,
  hostIncarnation: ids.host,
  epoch: 0,
};

export type Builders = { readonly [T in EventType]: () => EventOf<T> };

/** Builders of one valid example per event type (every optional field set where it has a meaning). */
export const EXAMPLE_BUILDERS: Builders = {
  "run.submitted": () => ({
    ...envelope("run.submitted"),
    tenantId: ids.tenant,
    data: {
      sharedRunId: ids.sharedRun,
      dag: exampleDag,
      idempotencyKey: "idem-1",
      source: "api",
      labels: { team: "ml" },
    },
  }),
  "run.admitted": () => ({
    ...envelope("run.admitted"),
    tenantId: ids.tenant,
    data: {
      runtimeInstanceId: ids.runtime,
      localRunId: ids.localRun,
      reservationId: "res-1",
      candidates: [{ runtimeInstanceId: ids.runtime, rank: 0, why: "most free slots" }],
      recovery: false,
    },
  }),
  "run.queued-globally": () => ({
    ...envelope("run.queued-globally"),
    tenantId: ids.tenant,
    data: { reason: reason("no-visible-capacity", "0 candidates") },
  }),
  "run.scale-out-requested": () => ({
    ...envelope("run.scale-out-requested"),
    tenantId: ids.tenant,
    data: { requestId: ids.scaleOut },
  }),
  "run.dispatch-failed": () => ({
    ...envelope("run.dispatch-failed"),
    tenantId: ids.tenant,
    data: { runtimeInstanceId: ids.runtime, localRunId: ids.localRun, reason: reason("dispatch-timeout") },
  }),
  "run.dispatched": () => ({
    ...envelope("run.dispatched"),
    tenantId: ids.tenant,
    data: { runtimeInstanceId: ids.runtime, localRunId: ids.localRun, transport: "grpc", hostIncarnation: ids.host },
  }),
  "run.started": () => ({
    ...envelope("run.started"),
    tenantId: ids.tenant,
    writer: runtimeWriter,
    data: { executionId: ids.execution, localRunId: ids.localRun, runtimeInstanceId: ids.runtime },
  }),
  "run.requeued-for-resume": () => ({
    ...envelope("run.requeued-for-resume"),
    tenantId: ids.tenant,
    data: {
      forensicsId: forensicsIds.inFlight,
      incidentId: ids.incident,
      executionId: ids.execution,
      failedRuntimeInstanceId: ids.runtime,
      failedLocalRunId: ids.localRun,
      newEpoch: 1,
    },
  }),
  "run.requeued-for-local-queued-recovery": () => ({
    ...envelope("run.requeued-for-local-queued-recovery"),
    tenantId: ids.tenant,
    data: {
      forensicsId: forensicsIds.localQueued,
      incidentId: ids.incident,
      failedRuntimeInstanceId: ids.runtime,
      failedLocalRunId: ids.localRun,
    },
  }),
  "run.replacement-selected": () => ({
    ...envelope("run.replacement-selected"),
    tenantId: ids.tenant,
    data: { forensicsId: forensicsIds.inFlight, runtimeInstanceId: ids.replacementRuntime },
  }),
  "run.completed": () => ({
    ...envelope("run.completed"),
    tenantId: ids.tenant,
    data: { executionId: ids.execution, localRunId: ids.localRun, outputDigest: DIGEST },
  }),
  "run.failed": () => ({
    ...envelope("run.failed"),
    tenantId: ids.tenant,
    data: { executionId: ids.execution, localRunId: ids.localRun, reason: reason("step-attempts-exhausted", "step b") },
  }),
  "run.cancel-requested": () => ({
    ...envelope("run.cancel-requested"),
    tenantId: ids.tenant,
    data: { by: "tenant:acme", reason: "user asked" },
  }),
  "run.forked": () => ({
    ...envelope("run.forked"),
    tenantId: ids.tenant,
    data: { forkRunId: SharedRunId.parse("run-0002"), fromStep: ids.step, by: "tenant:tenant-a" },
  }),
  "run.upgraded": () => ({
    ...envelope("run.upgraded"),
    tenantId: ids.tenant,
    data: { fromVersion: "a".repeat(64), toVersion: "b".repeat(64), kinds: ["custom:work"], by: "tenant:acme" },
  }),
  "run.signal-received": () => ({
    ...envelope("run.signal-received"),
    tenantId: ids.tenant,
    data: {
      name: "approval",
      by: "tenant:acme:token:alice",
      payload: { approved: true },
      payloadDigest: "d".repeat(64),
    },
  }),
  "run.cancelled": () => ({ ...envelope("run.cancelled"), tenantId: ids.tenant, data: { reason: "user asked" } }),
  "run.rejected": () => ({
    ...envelope("run.rejected"),
    tenantId: ids.tenant,
    data: { reason: reason("tenant-quota-exceeded") },
  }),

  ...EXEC_BUILDERS,

  ...RUNTIME_BUILDERS,

  ...FORENSICS_BUILDERS,
  ...SCHEDULE_BUILDERS,
};

/** A fresh example of the event of type `type`. */
export function exampleEvent<T extends EventType>(type: T): EventOf<T> {
  return EXAMPLE_BUILDERS[type]() as EventOf<T>;
}

/** One fresh example per event type, in catalogue order. */
export function allExampleEvents(): DroverEvent[] {
  return (Object.keys(EXAMPLE_BUILDERS) as EventType[]).map((t) => exampleEvent(t));
}
