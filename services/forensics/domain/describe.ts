import { isPlannedStopId, type DroverEvent, type EventOf } from "../../../contracts/index.ts";
import { assertNever } from "../../../contracts/assert-never.ts";
import { describeSchedule } from "./describe-schedule.ts";

import { desc, reason, type Description, type Of } from "./describe-parts.ts";
import { describeExec } from "./describe-exec.ts";
import { describeForensics } from "./describe-forensics.ts";

export type { Description };
const d = desc;

/**
 * Describes any event for the ledger and forensics rows. Step outputs, DAG params and labels are
 * never copied (they may hold nested arrays or keys FerretDB refuses); digests and counts are.
 * Pure; `aggregateId` is the id from the event's subject (runs and executions do not repeat it).
 */
export function describe(e: DroverEvent, aggregateId: string): Description {
  const [aggregate] = e.type.split(".");
  switch (aggregate) {
    case "run":
      return describeRun(e as Of<"run">, aggregateId);
    case "exec":
      return describeExec(e as Of<"exec">, aggregateId);
    case "scaleout":
      return describeScaleOut(e as Of<"scaleout">, aggregateId);
    case "runtime":
      return describeRuntime(e as Of<"runtime">, aggregateId);
    case "schedule":
      return describeSchedule(e as Of<"schedule">, aggregateId);
    case "flowkey": {
      const x = (e as Of<"flowkey">).data;
      return d(
        `flow key ${x.key} taken by run ${x.sharedRunId} (${x.inFlight} others in flight)`,
        { flowKeyId: aggregateId, key: x.key, name: x.name, inFlight: x.inFlight, ...(x.tat ? { tat: x.tat } : {}) },
        { sharedRunId: x.sharedRunId },
      );
    }
    case "quota": {
      const x = (e as Of<"quota">).data;
      return d(
        `runtime slot of prefix ${aggregateId} taken by ${x.runtimeInstanceId} (${x.live} of ${x.maxRuntimeInstances} live before)`,
        {
          runtimeInstanceIdPrefix: aggregateId,
          scaleOutRequestId: x.scaleOutRequestId,
          live: x.live,
          maxRuntimeInstances: x.maxRuntimeInstances,
        },
        { runtimeInstanceId: x.runtimeInstanceId },
      );
    }
    case "worker": {
      const w = e as Of<"worker">;
      if (w.type === "worker.deploy-requested")
        return d(`worker deploy requested by ${w.data.requestedBy}`, { requestedBy: w.data.requestedBy });
      return d(
        `worker version ${w.data.version.slice(0, 12)} deployed${w.data.requestedBy ? ` (asked by ${w.data.requestedBy})` : ""}`,
        {
          version: w.data.version,
          kinds: w.data.kinds.length,
          ...(w.data.previous ? { previous: w.data.previous } : {}),
          ...(w.data.requestedBy ? { requestedBy: w.data.requestedBy } : {}),
        },
      );
    }
    default:
      return describeForensics(e as Of<"forensics">);
  }
}

function describeRun(e: Of<"run">, sharedRunId: string): Description {
  const run = { sharedRunId };
  switch (e.type) {
    case "run.submitted":
      return d(
        `submitted "${e.data.dag.name ?? "unnamed"}" (${e.data.dag.steps.length} steps) via ${e.data.source}`,
        {
          dagName: e.data.dag.name ?? null,
          stepCount: e.data.dag.steps.length,
          source: e.data.source,
          idempotencyKey: e.data.idempotencyKey ?? null,
        },
        run,
      );
    case "run.admitted":
      return d(
        `admitted to ${e.data.runtimeInstanceId} as ${e.data.localRunId}${e.data.recovery ? " (recovery item)" : ""} from ${e.data.candidates.length} candidates`,
        {
          reservationId: e.data.reservationId,
          recovery: e.data.recovery,
          candidates: e.data.candidates.map((c) => ({ ...c })),
        },
        { ...run, runtimeInstanceId: e.data.runtimeInstanceId, localRunId: e.data.localRunId },
      );
    case "run.queued-globally":
      return d(`queued globally: ${e.data.reason.code}`, reason(e.data.reason), run);
    case "run.scale-out-requested":
      return d(`scale-out requested (${e.data.requestId})`, { requestId: e.data.requestId }, run);
    case "run.dispatch-failed":
      return d(
        `dispatch of ${e.data.localRunId} to ${e.data.runtimeInstanceId} failed: ${e.data.reason.code}`,
        reason(e.data.reason),
        { ...run, runtimeInstanceId: e.data.runtimeInstanceId, localRunId: e.data.localRunId },
      );
    case "run.dispatched":
      return d(
        `dispatched ${e.data.localRunId} to ${e.data.runtimeInstanceId} over ${e.data.transport}${e.data.resumeExecutionId ? ` to resume ${e.data.resumeExecutionId}` : ""}`,
        {
          transport: e.data.transport,
          hostIncarnation: e.data.hostIncarnation,
          resumeExecutionId: e.data.resumeExecutionId ?? null,
        },
        {
          ...run,
          runtimeInstanceId: e.data.runtimeInstanceId,
          localRunId: e.data.localRunId,
          ...(e.data.resumeExecutionId ? { executionId: e.data.resumeExecutionId } : {}),
        },
      );
    case "run.started":
      return d(
        `started execution ${e.data.executionId} on ${e.data.runtimeInstanceId}`,
        {},
        {
          ...run,
          executionId: e.data.executionId,
          localRunId: e.data.localRunId,
          runtimeInstanceId: e.data.runtimeInstanceId,
        },
      );
    case "run.requeued-for-resume":
      return d(
        `requeued to resume ${e.data.executionId} at epoch ${e.data.newEpoch} after ${e.data.failedRuntimeInstanceId} failed`,
        { newEpoch: e.data.newEpoch, failedLocalRunId: e.data.failedLocalRunId },
        {
          ...run,
          executionId: e.data.executionId,
          incidentId: e.data.incidentId,
          forensicsId: e.data.forensicsId,
          runtimeInstanceId: e.data.failedRuntimeInstanceId,
          localRunId: e.data.failedLocalRunId,
        },
      );
    case "run.requeued-for-local-queued-recovery":
      return d(
        `requeued for redispatch (never started) after ${e.data.failedRuntimeInstanceId} failed`,
        { failedLocalRunId: e.data.failedLocalRunId },
        {
          ...run,
          incidentId: e.data.incidentId,
          forensicsId: e.data.forensicsId,
          runtimeInstanceId: e.data.failedRuntimeInstanceId,
          localRunId: e.data.failedLocalRunId,
        },
      );
    case "run.replacement-selected":
      return d(
        `replacement ${e.data.runtimeInstanceId} selected`,
        {},
        { ...run, forensicsId: e.data.forensicsId, runtimeInstanceId: e.data.runtimeInstanceId },
      );
    case "run.completed":
      return d(
        `completed (${e.data.executionId})`,
        { outputDigest: e.data.outputDigest },
        { ...run, executionId: e.data.executionId, localRunId: e.data.localRunId },
      );
    case "run.failed":
      return d(`failed: ${e.data.reason.code}`, reason(e.data.reason), {
        ...run,
        ...(e.data.executionId ? { executionId: e.data.executionId } : {}),
        ...(e.data.localRunId ? { localRunId: e.data.localRunId } : {}),
      });
    case "run.cancel-requested":
      return d(`cancel requested by ${e.data.by}`, { reasonDetail: e.data.reason, by: e.data.by }, run);
    case "run.forked":
      return d(
        `forked from step ${e.data.fromStep} by ${e.data.by} as ${e.data.forkRunId}`,
        { forkRunId: e.data.forkRunId, fromStep: e.data.fromStep, by: e.data.by },
        run,
      );
    case "run.upgraded":
      return d(
        `upgraded from worker version ${e.data.fromVersion.slice(0, 12)} to ${e.data.toVersion.slice(0, 12)} by ${e.data.by}`,
        { fromVersion: e.data.fromVersion, toVersion: e.data.toVersion, by: e.data.by },
        run,
      );
    case "run.signal-received":
      return d(
        `signal ${e.data.name} received from ${e.data.by}`,
        { name: e.data.name, by: e.data.by, payloadDigest: e.data.payloadDigest, signalId: e.data.signalId ?? null },
        run,
      );
    case "run.cancelled":
      return d("cancelled", { reasonDetail: e.data.reason, ...(e.data.by ? { by: e.data.by } : {}) }, run);
    case "run.rejected":
      return d(`rejected: ${e.data.reason.code}`, reason(e.data.reason), run);
    default:
      return assertNever(e, "run event");
  }
}

function describeScaleOut(e: Of<"scaleout">, requestId: string): Description {
  switch (e.type) {
    case "scaleout.requested":
      return d(`scale-out ${requestId} requested: ${e.data.reason.code}`, {
        ...reason(e.data.reason),
        requestId,
        isolationMode: e.data.policy.isolationMode,
        providerHint: e.data.providerHint,
        transport: e.data.transport,
      });
    case "scaleout.observed":
      return d(`scale-out ${requestId} taken by ${e.data.provisionerInstanceId}`, { requestId });
    case "scaleout.fulfilled":
      return d(
        `scale-out ${requestId} fulfilled by ${e.data.runtimeInstanceId}`,
        { requestId },
        { runtimeInstanceId: e.data.runtimeInstanceId },
      );
    case "scaleout.rejected":
      return d(
        `scale-out ${requestId} rejected: ${e.data.reason.code}`,
        { ...reason(e.data.reason), requestId },
        e.data.runtimeInstanceId ? { runtimeInstanceId: e.data.runtimeInstanceId } : {},
      );
    case "scaleout.expired":
      return d(`scale-out ${requestId} expired`, { requestId });
    case "scaleout.cancelled":
      return d(`scale-out ${requestId} cancelled`, { requestId, reasonDetail: e.data.reason });
    default:
      return assertNever(e, "scale-out event");
  }
}

function describeRuntime(e: Of<"runtime">, id: string): Description {
  const rt = { runtimeInstanceId: id };
  switch (e.type) {
    case "runtime.registered":
      return d(
        `runtime ${id} registered (${e.data.isolationMode}, ${e.data.hostProvider}, ${e.data.transport})`,
        {
          isolationMode: e.data.isolationMode,
          hostProvider: e.data.hostProvider,
          transport: e.data.transport,
          pool: e.data.pool,
        },
        rt,
      );
    case "runtime.host-start-requested":
      return d(`host start requested (attempt ${e.data.attempt})`, { attempt: e.data.attempt }, rt);
    case "runtime.host-started":
      return d(
        `host started: ${e.data.hostIncarnation}`,
        { hostIncarnation: e.data.hostIncarnation, convergence: e.data.convergence },
        rt,
      );
    case "runtime.host-start-failed":
      return d(
        `host start failed: ${e.data.reason.code}`,
        { ...reason(e.data.reason), layer: e.data.layer ?? null },
        rt,
      );
    case "runtime.readiness-layer-passed":
      return d(
        `readiness layer ${e.data.layer} passed`,
        { layer: e.data.layer, hostIncarnation: e.data.hostIncarnation },
        rt,
      );
    case "runtime.endpoint-published":
      return d("endpoint published", { endpoint: e.data.endpoint, hostIncarnation: e.data.hostIncarnation }, rt);
    case "runtime.capacity-published":
      return d("capacity published", { hostIncarnation: e.data.hostIncarnation }, rt);
    case "runtime.draining":
      return d("draining", { reasonDetail: e.data.reason }, rt);
    case "runtime.suspected":
      return d(
        `runtime ${id} suspected: ${e.data.reason.code}`,
        { ...reason(e.data.reason), hostIncarnation: e.data.hostIncarnation ?? null },
        { ...rt, incidentId: e.data.incidentId },
      );
    case "runtime.fenced":
      return d(
        `runtime ${id} fenced: ${e.data.proof.kind} of ${e.data.hostIncarnation}`,
        { hostIncarnation: e.data.hostIncarnation, proofKind: e.data.proof.kind },
        { ...rt, incidentId: e.data.incidentId },
      );
    case "runtime.fence-failed":
      return d(
        `fence of ${id} not proven (attempt ${e.data.attempt}): ${e.data.reason.code}`,
        { ...reason(e.data.reason), attempt: e.data.attempt, hostIncarnation: e.data.hostIncarnation },
        { ...rt, incidentId: e.data.incidentId },
      );
    case "runtime.recovery-planned":
      return d(
        isPlannedStopId(e.data.incidentId)
          ? `planned stop: ${e.data.items.length} runs moved (no incident)`
          : `recovery planned for ${e.data.items.length} items`,
        { itemCount: e.data.items.length },
        { ...rt, incidentId: e.data.incidentId },
      );
    case "runtime.host-exited":
      return d(
        `host ${e.data.hostIncarnation} ${e.data.kind}`,
        {
          hostIncarnation: e.data.hostIncarnation,
          kind: e.data.kind,
          exitCode: e.data.exitCode,
          signal: e.data.signal,
        },
        rt,
      );
    case "runtime.retired":
      return e.data.stopped
        ? d(
            `retired by a planned stop (${e.data.stopped.reason.code}): ${e.data.stopped.proof.kind} of ${e.data.stopped.hostIncarnation}`,
            {
              ...reason(e.data.stopped.reason),
              hostIncarnation: e.data.stopped.hostIncarnation,
              proofKind: e.data.stopped.proof.kind,
            },
            { ...rt, incidentId: e.data.stopped.stopId },
          )
        : d("retired", { reasonDetail: e.data.reason }, rt);
    case "runtime.pool-member-registered":
      return d(
        `warm pool member ${id} registered (${e.data.hostProvider}, pool ${e.data.pool})`,
        { hostProvider: e.data.hostProvider, pool: e.data.pool },
        rt,
      );
    case "runtime.pool-member-ready":
      return d(
        `warm pool member ${id} ready (${e.data.hostIncarnation})`,
        { hostIncarnation: e.data.hostIncarnation, bindEndpoint: e.data.bindEndpoint },
        rt,
      );
    case "runtime.pool-member-claimed":
      return d(
        `warm pool member ${id} claimed for runtime ${e.data.runtimeInstanceId} (${e.data.tenantId ? `tenant ${e.data.tenantId}` : "shared"})`,
        {
          boundRuntimeInstanceId: e.data.runtimeInstanceId,
          hostIncarnation: e.data.hostIncarnation,
          scaleOutRequestId: e.data.scaleOutRequestId,
          boundTenantId: e.data.tenantId ?? null,
        },
        rt,
      );
    default:
      return assertNever(e, "runtime event");
  }
}

/** Whether `e` is part of a recovery: what a tenant with no work on a failed runtime never sees in its ledger. */
export function isRecoveryEvent(e: DroverEvent): boolean {
  switch (e.type) {
    case "run.requeued-for-resume":
    case "run.requeued-for-local-queued-recovery":
    case "run.replacement-selected":
    case "exec.paused-for-recovery":
    case "exec.resumed":
    case "runtime.recovery-planned":
      return true;
    case "run.admitted":
      return (e as EventOf<"run.admitted">).data.recovery;
    case "run.dispatched":
      return (e as EventOf<"run.dispatched">).data.resumeExecutionId !== undefined;
    default:
      return e.type.startsWith("forensics.");
  }
}
