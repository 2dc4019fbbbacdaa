import {
  ExecutionId,
  LocalRunId,
  RuntimeFailureIncidentId,
  RuntimeInstanceId,
  SharedRunId,
  StepId,
  TenantId,
  inFlightForensicsId,
  type DroverEvent,
  type EventType,
} from "../../contracts/index.ts";
import {
  execRef,
  flowKeyRef,
  runtimeQuotaRef,
  workerDeploysRef,
  forensicsRef,
  runRef,
  runtimeRef,
  scheduleRef,
  type AggregateRef,
} from "../../streams/subjects.ts";
import type { EventStore } from "../../streams/types.ts";
import { allExampleEvents, ids as exampleIds } from "./example-events.ts";
import { event } from "./streams.ts";

/**
 * A recovery scenario for the forensics read models: a shared runtime fails while it holds one
 * in-flight execution of `acme`; `globex` ran a run to completion on the same runtime before the
 * failure, so it has no item in the incident and must see no recovery entry at all.
 */
export const scenario = {
  acme: TenantId.parse("acme"),
  globex: TenantId.parse("globex"),
  runtime: RuntimeInstanceId.parse("rt-shared-0001"),
  replacement: RuntimeInstanceId.parse("rt-shared-0002"),
  incident: RuntimeFailureIncidentId.parse("inc-shared-0001"),
  acmeRun: SharedRunId.parse("run-acme-0001"),
  acmeExec: ExecutionId.parse("ex-acme-0001"),
  acmeLocal: LocalRunId.parse("lr-acme-0001"),
  acmeLocal2: LocalRunId.parse("lr-acme-0002"),
  globexRun: SharedRunId.parse("run-globex-0001"),
  globexExec: ExecutionId.parse("ex-globex-0001"),
  globexLocal: LocalRunId.parse("lr-globex-0001"),
};
const s = scenario;
export const acmeForensicsId = inFlightForensicsId(s.acmeExec, s.acmeRun, s.acmeLocal);

/** Appends `e` to `ref` at the aggregate's current end (tests append from one writer). */
async function put(store: EventStore, ref: AggregateRef, e: DroverEvent): Promise<number> {
  return (await store.append(ref, e, { expectedSeq: await store.lastSeq(ref) })).seq;
}

/** The ref an example event belongs to, from its type and the example ids. */
function exampleRef(e: DroverEvent): AggregateRef {
  const [aggregate] = e.type.split(".") as [string];
  const tenant = exampleIds.tenant;
  switch (aggregate) {
    case "run":
      return runRef(tenant, exampleIds.sharedRun);
    case "exec":
      return execRef(tenant, exampleIds.execution);
    case "scaleout":
      return { aggregate: "scaleout", tenantId: tenant, id: exampleIds.scaleOut };
    case "runtime":
      return runtimeRef(exampleIds.runtime);
    case "schedule":
      return scheduleRef(tenant, "sch-nightly");
    case "flowkey":
      return flowKeyRef(tenant, `fk-${"0a".repeat(12)}`);
    case "quota":
      return runtimeQuotaRef(tenant, "rt-tenant-a");
    case "worker":
      return workerDeploysRef(tenant);
    default:
      return forensicsRef(tenant, (e.data as { forensicsId: string }).forensicsId);
  }
}

/** Appends one example of every event type (tenant `tenant-a`); returns the last sequence. */
export async function appendExamples(store: EventStore): Promise<number> {
  let last = 0;
  for (const e of allExampleEvents())
    last = await put(store, exampleRef(e), { ...e, eventId: event(e.type as EventType).eventId } as DroverEvent);
  return last;
}

/** Appends the shared-runtime failure scenario; returns the last sequence. */
export async function appendScenario(store: EventStore): Promise<number> {
  const rt = runtimeRef(s.runtime);
  const acmeRun = runRef(s.acme, s.acmeRun),
    acmeExec = execRef(s.acme, s.acmeExec),
    fx = forensicsRef(s.acme, acmeForensicsId);
  const globexRun = runRef(s.globex, s.globexRun),
    globexExec = execRef(s.globex, s.globexExec);
  const writer = { service: "runtime" as const, instanceId: "rt", runtimeInstanceId: s.runtime, epoch: 0 };
  const reg = event("runtime.registered");
  await put(store, rt, { ...reg, data: { ...reg.data, tenantId: undefined, isolationMode: "shared" } });
  for (const [tenantId, run, exec, local, sharedRunId, executionId] of [
    [s.globex, globexRun, globexExec, s.globexLocal, s.globexRun, s.globexExec],
    [s.acme, acmeRun, acmeExec, s.acmeLocal, s.acmeRun, s.acmeExec],
  ] as const) {
    await put(store, run, {
      ...event("run.submitted"),
      tenantId,
      data: { ...event("run.submitted").data, sharedRunId },
    });
    await put(store, run, {
      ...event("run.admitted"),
      tenantId,
      data: {
        runtimeInstanceId: s.runtime,
        localRunId: local,
        reservationId: `res-${local}`,
        candidates: [{ runtimeInstanceId: s.runtime, rank: 0, why: "most free slots" }],
        recovery: false,
      },
    });
    await put(store, run, {
      ...event("run.dispatched"),
      tenantId,
      data: { runtimeInstanceId: s.runtime, localRunId: local, transport: "http", hostIncarnation: exampleIds.host },
    });
    await put(store, run, {
      ...event("run.started"),
      tenantId,
      writer,
      data: { executionId, localRunId: local, runtimeInstanceId: s.runtime },
    });
    await put(store, exec, {
      ...event("exec.started"),
      tenantId,
      writer,
      data: { ...event("exec.started").data, sharedRunId, localRunId: local, runtimeInstanceId: s.runtime },
    });
    for (const stepId of ["a", "b"])
      await put(store, exec, {
        ...event("exec.step-completed"),
        tenantId,
        writer,
        data: { ...event("exec.step-completed").data, stepId: StepId.parse(stepId) },
      });
  }
  await put(store, globexExec, { ...event("exec.completed"), tenantId: s.globex, writer });
  await put(store, globexRun, {
    ...event("run.completed"),
    tenantId: s.globex,
    data: { executionId: s.globexExec, localRunId: s.globexLocal, outputDigest: "d".repeat(64) },
  });

  // The runtime fails holding acme's execution only.
  await put(store, rt, {
    ...event("runtime.suspected"),
    data: { ...event("runtime.suspected").data, incidentId: s.incident },
  });
  await put(store, rt, {
    ...event("runtime.fenced"),
    data: { ...event("runtime.fenced").data, incidentId: s.incident },
  });
  await put(store, rt, {
    ...event("runtime.recovery-planned"),
    data: {
      incidentId: s.incident,
      items: [
        {
          forensicsId: acmeForensicsId,
          tenantId: s.acme,
          sharedRunId: s.acmeRun,
          localRunId: s.acmeLocal,
          executionId: s.acmeExec,
          class: "in-flight-execution",
        },
      ],
    },
  });
  const item = {
    forensicsId: acmeForensicsId,
    incidentId: s.incident,
    class: "in-flight-execution" as const,
    sharedRunId: s.acmeRun,
    failedRuntimeInstanceId: s.runtime,
    failedLocalRunId: s.acmeLocal,
    executionId: s.acmeExec,
  };
  await put(store, acmeExec, {
    ...event("exec.paused-for-recovery"),
    tenantId: s.acme,
    data: { forensicsId: acmeForensicsId, incidentId: s.incident, failedRuntimeInstanceId: s.runtime, newEpoch: 1 },
  });
  await put(store, acmeRun, {
    ...event("run.requeued-for-resume"),
    tenantId: s.acme,
    data: {
      forensicsId: acmeForensicsId,
      incidentId: s.incident,
      executionId: s.acmeExec,
      failedRuntimeInstanceId: s.runtime,
      failedLocalRunId: s.acmeLocal,
      newEpoch: 1,
    },
  });
  await put(store, fx, {
    ...event("forensics.execution-recovery-candidate-detected"),
    tenantId: s.acme,
    data: { ...item, completedSteps: 2 },
  });
  await put(store, fx, {
    ...event("forensics.shared-run-requeued-for-resume"),
    tenantId: s.acme,
    data: { ...item, newEpoch: 1 },
  });

  // Recovery: placed on the replacement, resumed under the same ExecutionId, completed.
  await put(store, acmeRun, {
    ...event("run.admitted"),
    tenantId: s.acme,
    data: {
      runtimeInstanceId: s.replacement,
      localRunId: s.acmeLocal2,
      reservationId: "res-r",
      candidates: [{ runtimeInstanceId: s.replacement, rank: 0, why: "recovery item first" }],
      recovery: true,
    },
  });
  await put(store, acmeRun, {
    ...event("run.dispatched"),
    tenantId: s.acme,
    data: {
      runtimeInstanceId: s.replacement,
      localRunId: s.acmeLocal2,
      transport: "http",
      hostIncarnation: exampleIds.host,
      resumeExecutionId: s.acmeExec,
    },
  });
  const w2 = { ...writer, runtimeInstanceId: s.replacement, epoch: 1 };
  await put(store, acmeExec, {
    ...event("exec.resumed"),
    tenantId: s.acme,
    writer: w2,
    data: { runtimeInstanceId: s.replacement, localRunId: s.acmeLocal2, epoch: 1, completedSteps: 2 },
  });
  await put(store, acmeExec, {
    ...event("exec.step-completed"),
    tenantId: s.acme,
    writer: w2,
    data: { ...event("exec.step-completed").data, stepId: StepId.parse("c") },
  });
  await put(store, acmeExec, { ...event("exec.completed"), tenantId: s.acme, writer: w2 });
  await put(store, acmeRun, {
    ...event("run.completed"),
    tenantId: s.acme,
    data: { executionId: s.acmeExec, localRunId: s.acmeLocal2, outputDigest: "d".repeat(64) },
  });
  return put(store, fx, {
    ...event("forensics.execution-recovery-completed"),
    tenantId: s.acme,
    data: { ...item, outcome: "completed" },
  });
}
