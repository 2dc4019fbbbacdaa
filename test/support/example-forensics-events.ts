/** One valid example of every `forensics.*` event (spread into example-events.ts's EXAMPLE_BUILDERS). */
import { StepId, type EventType } from "../../contracts/index.ts";
import { DIGEST, envelope, forensicsIds, ids, type Builders } from "./example-events.ts";

/** The incident item the examples share (built on use: this module and example-events.ts import each other). */
const item = () => ({
  forensicsId: forensicsIds.inFlight,
  incidentId: ids.incident,
  class: "in-flight-execution" as const,
  sharedRunId: ids.sharedRun,
  failedRuntimeInstanceId: ids.runtime,
  failedLocalRunId: ids.localRun,
  executionId: ids.execution,
});

export const FORENSICS_BUILDERS = {
  "forensics.execution-recovery-candidate-detected": () => ({
    ...envelope("forensics.execution-recovery-candidate-detected"),
    tenantId: ids.tenant,
    data: { ...item(), completedSteps: 2 },
  }),
  "forensics.shared-run-requeued-for-resume": () => ({
    ...envelope("forensics.shared-run-requeued-for-resume"),
    tenantId: ids.tenant,
    data: { ...item(), newEpoch: 1 },
  }),
  "forensics.shared-run-requeued-for-local-queued-recovery": () => ({
    ...envelope("forensics.shared-run-requeued-for-local-queued-recovery"),
    tenantId: ids.tenant,
    data: { ...item(), forensicsId: forensicsIds.localQueued, class: "local-queued", executionId: undefined },
  }),
  "forensics.failed-local-run-marked-requeued-for-recovery": () => ({
    ...envelope("forensics.failed-local-run-marked-requeued-for-recovery"),
    tenantId: ids.tenant,
    data: { ...item() },
  }),
  "forensics.replacement-runtime-selected": () => ({
    ...envelope("forensics.replacement-runtime-selected"),
    tenantId: ids.tenant,
    data: { ...item(), replacementRuntimeInstanceId: ids.replacementRuntime },
  }),
  "forensics.replacement-local-run-registered": () => ({
    ...envelope("forensics.replacement-local-run-registered"),
    tenantId: ids.tenant,
    data: {
      ...item(),
      replacementRuntimeInstanceId: ids.replacementRuntime,
      replacementLocalRunId: ids.replacementLocalRun,
    },
  }),
  "forensics.resume-context-seeded": () => ({
    ...envelope("forensics.resume-context-seeded"),
    tenantId: ids.tenant,
    data: { ...item(), completedSteps: 2, firstIncompleteStepId: StepId.parse("d") },
  }),
  "forensics.dag-resume-started": () => ({
    ...envelope("forensics.dag-resume-started"),
    tenantId: ids.tenant,
    data: { ...item(), replacementRuntimeInstanceId: ids.replacementRuntime, epoch: 1 },
  }),
  "forensics.dag-resume-completed": () => ({
    ...envelope("forensics.dag-resume-completed"),
    tenantId: ids.tenant,
    data: { ...item(), outputDigest: DIGEST },
  }),
  "forensics.execution-recovery-completed": () => ({
    ...envelope("forensics.execution-recovery-completed"),
    tenantId: ids.tenant,
    data: { ...item(), outcome: "completed" },
  }),
} satisfies Pick<Builders, Extract<EventType, `forensics.${string}`>>;
