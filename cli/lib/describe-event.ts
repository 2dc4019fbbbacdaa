import type { DroverEvent, EventOf, EventType } from "../../contracts/index.ts";

/** Where an event sits in a run's story (recovery.md "Forensics and ledger"). */
export type Phase =
  | "submission"
  | "admission"
  | "scale-out"
  | "dispatch"
  | "host"
  | "steps"
  | "failure"
  | "fence"
  | "recovery"
  | "completion"
  | "schedule";

type Describe = { readonly [T in EventType]: (e: EventOf<T>) => readonly [Phase, string] };
const reason = (r: { code: string; detail?: string }) => (r.detail ? `${r.code} (${r.detail})` : r.code);

// Typed by EventType: a new event in the catalogue fails to compile until it is described here.
const DESCRIBE: Describe = {
  "run.submitted": (e) => [
    "submission",
    `submitted ${e.data.sharedRunId} (${e.data.dag.steps.length} step(s), DAG ${e.data.dag.name ?? "unnamed"}, via ${e.data.source})`,
  ],
  "run.admitted": (e) => [
    "admission",
    `admitted to ${e.data.runtimeInstanceId} as ${e.data.localRunId}${e.data.recovery ? " (recovery item)" : ""}; candidates: ${
      e.data.candidates.length === 0
        ? "none recorded"
        : e.data.candidates.map((c) => `${c.runtimeInstanceId} rank ${c.rank} — ${c.why}`).join("; ")
    }`,
  ],
  "run.queued-globally": (e) => ["admission", `queued globally: ${reason(e.data.reason)}`],
  "run.scale-out-requested": (e) => ["admission", `asked for capacity: scale-out request ${e.data.requestId}`],
  "run.dispatch-failed": (e) => [
    "dispatch",
    `dispatch of ${e.data.localRunId} to ${e.data.runtimeInstanceId} failed: ${reason(e.data.reason)}`,
  ],
  "run.dispatched": (e) => [
    "dispatch",
    `dispatched ${e.data.localRunId} to ${e.data.runtimeInstanceId} over ${e.data.transport} (${e.data.hostIncarnation})${e.data.resumeExecutionId ? `, ResumeExecution ${e.data.resumeExecutionId}` : ""}`,
  ],
  "run.started": (e) => [
    "dispatch",
    `started: ${e.data.localRunId} on ${e.data.runtimeInstanceId} runs execution ${e.data.executionId}`,
  ],
  "run.requeued-for-resume": (e) => [
    "recovery",
    `requeued for resume of ${e.data.executionId} at epoch ${e.data.newEpoch} (incident ${e.data.incidentId}, was ${e.data.failedLocalRunId} on ${e.data.failedRuntimeInstanceId})`,
  ],
  "run.requeued-for-local-queued-recovery": (e) => [
    "recovery",
    `requeued for redispatch: ${e.data.failedLocalRunId} never started on ${e.data.failedRuntimeInstanceId} (incident ${e.data.incidentId})`,
  ],
  "run.replacement-selected": (e) => ["recovery", `replacement ${e.data.runtimeInstanceId} selected`],
  "run.completed": (e) => ["completion", `run completed by ${e.data.executionId} (${e.data.localRunId})`],
  "run.failed": (e) => ["completion", `run failed: ${reason(e.data.reason)}`],
  "run.cancel-requested": (e) => [
    "completion",
    `cancel requested by ${e.data.by}${e.data.reason ? `: ${e.data.reason}` : ""}`,
  ],
  "run.upgraded": (e) => [
    "completion",
    `upgraded to worker version ${e.data.toVersion.slice(0, 12)} (from ${e.data.fromVersion.slice(0, 12)}) by ${e.data.by}`,
  ],
  "run.forked": (e) => ["completion", `forked from step ${e.data.fromStep} by ${e.data.by} as ${e.data.forkRunId}`],
  "run.signal-received": (e) => [
    "steps",
    `signal ${e.data.name} received from ${e.data.by}${e.data.signalId ? ` (signal id ${e.data.signalId})` : ""}, payload sha256 ${e.data.payloadDigest}`,
  ],
  "run.cancelled": (e) => ["completion", `run cancelled${e.data.reason ? `: ${e.data.reason}` : ""}`],
  "run.rejected": (e) => ["completion", `run rejected: ${reason(e.data.reason)}`],
  "exec.started": (e) => [
    "steps",
    `execution started on ${e.data.runtimeInstanceId} (${e.data.localRunId}) at epoch ${e.data.epoch}, ${e.data.stepCount} step(s)`,
  ],
  "exec.step-completed": (e) => ["steps", `${e.data.stepId}#${e.data.attempt} completed`],
  "exec.step-failed": (e) => [
    "steps",
    `${e.data.stepId}#${e.data.attempt} failed${e.data.retryAt ? "" : " (no attempts left)"}`,
  ],
  "exec.timer-started": (e) => ["steps", `${e.data.stepId}#${e.data.attempt} sleeps until ${e.data.wakeAt}`],
  "exec.condition-evaluated": (e) => ["steps", `${e.data.stepId} condition ${e.data.result}`],
  "exec.step-skipped": (e) => ["steps", `${e.data.stepId} skipped (${e.data.reason}): ${e.data.detail}`],
  "exec.map-expanded": (e) => [
    "steps",
    `${e.data.stepId} map expanded: ${e.data.count} items, at most ${e.data.maxConcurrency} at once, ${e.data.toleratedFailures} failures tolerated`,
  ],
  "exec.child-run-submitted": (e) => [
    "steps",
    `${e.data.stepId} submitted child run ${e.data.childRunId} (attempt ${e.data.attempt})`,
  ],
  "exec.step-reused": (e) => [
    "steps",
    `${e.data.stepId} reused from run ${e.data.fromRun}${e.data.cache ? ` step ${e.data.cache.fromStepId} (step cache hit, not executed)` : " (not executed)"}`,
  ],
  "exec.wait-opened": (e) => ["steps", `${e.data.stepId} waits for signal ${e.data.name} until ${e.data.timeoutAt}`],
  "exec.wait-resolved": (e) => [
    "steps",
    e.data.by === "signal"
      ? `${e.data.stepId} wait ${e.data.name} resolved by ${e.data.principal} (payload sha256 ${e.data.payloadDigest})`
      : `${e.data.stepId} wait ${e.data.name} timed out`,
  ],
  "exec.paused-for-recovery": (e) => [
    "recovery",
    `execution paused for recovery: epoch → ${e.data.newEpoch} (${e.data.forensicsId})`,
  ],
  "exec.resumed": (e) => [
    "recovery",
    `execution resumed on ${e.data.runtimeInstanceId} (${e.data.localRunId}) at epoch ${e.data.epoch} with ${e.data.completedSteps} steps already done`,
  ],
  "exec.completed": () => ["completion", "execution completed"],
  "exec.failed": (e) => ["completion", `execution failed: ${reason(e.data.reason)}`],
  "exec.cancelled": () => ["completion", "execution cancelled"],
  "scaleout.requested": (e) => [
    "scale-out",
    `scale-out ${e.data.requestId} requested: ${reason(e.data.reason)}, ${e.data.policy.isolationMode}, prefix ${e.data.policy.runtimeInstanceIdPrefix}`,
  ],
  "scaleout.observed": (e) => ["scale-out", `observed by ${e.data.provisionerInstanceId}`],
  "scaleout.fulfilled": (e) => ["scale-out", `fulfilled by runtime ${e.data.runtimeInstanceId}`],
  "scaleout.rejected": (e) => ["scale-out", `rejected: ${reason(e.data.reason)}`],
  "scaleout.expired": () => ["scale-out", "expired"],
  "scaleout.cancelled": () => ["scale-out", "cancelled"],
  "runtime.registered": (e) => [
    "host",
    `registered (${e.data.isolationMode}, ${e.data.hostProvider}, ${e.data.transport})`,
  ],
  "runtime.host-start-requested": (e) => ["host", `host start requested (attempt ${e.data.attempt})`],
  "runtime.host-started": (e) => ["host", `host started: ${e.data.hostIncarnation}`],
  "runtime.host-start-failed": (e) => ["host", `host start failed: ${reason(e.data.reason)}`],
  "runtime.readiness-layer-passed": (e) => ["host", `readiness layer ${e.data.layer} passed`],
  "runtime.endpoint-published": (e) => ["host", `endpoint ${e.data.endpoint}`],
  "runtime.capacity-published": () => ["host", "capacity published"],
  "runtime.draining": () => ["host", "draining"],
  "runtime.suspected": (e) => ["failure", `suspected: ${reason(e.data.reason)} (incident ${e.data.incidentId})`],
  "runtime.fenced": (e) => [
    "fence",
    `fenced ${e.data.hostIncarnation}: ${e.data.proof.kind === "process-exit" ? `pid ${e.data.proof.pid} exited (${e.data.proof.signal ?? e.data.proof.exitCode})` : `pod ${e.data.proof.podUid} gone`}`,
  ],
  "runtime.fence-failed": (e) => ["fence", `fence not proven (attempt ${e.data.attempt}): ${reason(e.data.reason)}`],
  "runtime.recovery-planned": (e) => [
    "recovery",
    `recovery planned: ${e.data.items.length} item(s) (${e.data.items.map((i) => i.class).join(", ")})`,
  ],
  "runtime.host-exited": (e) => [
    "failure",
    `host ${e.data.hostIncarnation} ${e.data.kind}${e.data.signal ? ` (${e.data.signal})` : ""}`,
  ],
  "runtime.retired": () => ["host", "retired"],
  "runtime.pool-member-registered": (e) => ["host", `warm pool member registered (${e.data.hostProvider})`],
  "runtime.pool-member-ready": (e) => ["host", `warm pool member ready: ${e.data.hostIncarnation}`],
  "runtime.pool-member-claimed": (e) => [
    "host",
    `warm pool member claimed for ${e.data.runtimeInstanceId}${e.data.tenantId ? ` (tenant ${e.data.tenantId})` : " (shared)"}`,
  ],
  "forensics.execution-recovery-candidate-detected": (e) => [
    "recovery",
    `forensics: ${e.data.class} candidate detected`,
  ],
  "forensics.shared-run-requeued-for-resume": (e) => [
    "recovery",
    `forensics: requeued for resume at epoch ${e.data.newEpoch}`,
  ],
  "forensics.shared-run-requeued-for-local-queued-recovery": () => ["recovery", "forensics: requeued for redispatch"],
  "forensics.failed-local-run-marked-requeued-for-recovery": (e) => [
    "recovery",
    `forensics: ${e.data.failedLocalRunId} marked requeued`,
  ],
  "forensics.replacement-runtime-selected": (e) => [
    "recovery",
    `forensics: replacement ${e.data.replacementRuntimeInstanceId} selected`,
  ],
  "forensics.replacement-local-run-registered": (e) => [
    "recovery",
    `forensics: replacement local run ${e.data.replacementLocalRunId}`,
  ],
  "forensics.resume-context-seeded": (e) => [
    "recovery",
    `forensics: resume context seeded (${e.data.completedSteps} steps done)`,
  ],
  "forensics.dag-resume-started": (e) => [
    "recovery",
    `forensics: DAG resume started on ${e.data.replacementRuntimeInstanceId} at epoch ${e.data.epoch}`,
  ],
  "forensics.dag-resume-completed": () => ["recovery", "forensics: DAG resume completed"],
  "forensics.execution-recovery-completed": (e) => ["recovery", `forensics: recovery completed (${e.data.outcome})`],
  "schedule.created": (e) => [
    "schedule",
    `schedule ${e.data.scheduleId} created by ${e.data.by} (${"cron" in e.data.spec ? `${e.data.spec.cron} ${e.data.spec.timezone}` : `every ${e.data.spec.intervalMs} ms`}, overlap ${e.data.overlap})`,
  ],
  "schedule.paused": (e) => ["schedule", `paused by ${e.data.by}`],
  "schedule.resumed": (e) => ["schedule", `resumed by ${e.data.by}`],
  "schedule.deleted": (e) => ["schedule", `deleted by ${e.data.by}`],
  "schedule.backfill-requested": (e) => ["schedule", `backfill ${e.data.from} .. ${e.data.to} asked by ${e.data.by}`],
  "schedule.fired": (e) => [
    "schedule",
    `fired for ${e.data.nominalAt}: run ${e.data.sharedRunId}${e.data.cancelled ? ` (cancelling ${e.data.cancelled})` : ""}`,
  ],
  "flowkey.acquired": (e) => [
    "admission",
    `flow key ${e.data.key} taken by run ${e.data.sharedRunId} (${e.data.inFlight} others in flight${e.data.tat ? `, next at ${e.data.tat}` : ""})`,
  ],
  "quota.runtime-slot-taken": (e) => [
    "scale-out",
    `runtime slot taken by ${e.data.runtimeInstanceId} for ${e.data.scaleOutRequestId} (${e.data.live} of ${e.data.maxRuntimeInstances} live before${e.data.warmPoolMember ? `, warm pool member ${e.data.warmPoolMember}` : ""})`,
  ],
  "worker.deploy-requested": (e) => ["host", `worker deploy requested by ${e.data.requestedBy}`],
  "worker.deployed": (e) => [
    "host",
    `worker version ${e.data.version.slice(0, 12)} deployed${e.data.requestedBy ? ` (asked by ${e.data.requestedBy})` : ""}`,
  ],
  "schedule.skipped": (e) => ["schedule", `skipped ${e.data.count} fire(s) from ${e.data.nominalAt}: ${e.data.reason}`],
};

/** The phase and one human line for an event. Total over the catalogue (typed by EventType). */
export function describeEvent(e: DroverEvent): readonly [Phase, string] {
  return (DESCRIBE[e.type] as (x: DroverEvent) => readonly [Phase, string])(e);
}
