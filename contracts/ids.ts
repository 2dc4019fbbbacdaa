import { z } from "zod";

/**
 * Ids appear in NATS subjects, Kubernetes names and labels, so every id is lowercase `[a-z0-9-]`,
 * starts and ends with an alphanumeric, and is at most 63 characters. A value that does not fit is
 * rejected with a clear message, never rewritten (identities-and-events.md "Identities").
 */
export const ID_MAX_LENGTH = 63;
export const ID_PATTERN = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

const id = (what: string) =>
  z
    .string()
    .min(1, `${what} must not be empty`)
    .max(ID_MAX_LENGTH, `${what} must be at most ${ID_MAX_LENGTH} characters`)
    .regex(ID_PATTERN, `${what} must be lowercase [a-z0-9-], starting and ending with a letter or digit`)
    .describe(what);

export const TenantId = id("TenantId").brand<"TenantId">();
export type TenantId = z.infer<typeof TenantId>;
export const TenantGroupId = id("TenantGroupId").brand<"TenantGroupId">();
export type TenantGroupId = z.infer<typeof TenantGroupId>;
export const SharedRunId = id("SharedRunId").brand<"SharedRunId">();
export type SharedRunId = z.infer<typeof SharedRunId>;
export const LocalRunId = id("LocalRunId").brand<"LocalRunId">();
export type LocalRunId = z.infer<typeof LocalRunId>;
export const ExecutionId = id("ExecutionId").brand<"ExecutionId">();
export type ExecutionId = z.infer<typeof ExecutionId>;
export const RuntimeInstanceId = id("RuntimeInstanceId").brand<"RuntimeInstanceId">();
export type RuntimeInstanceId = z.infer<typeof RuntimeInstanceId>;
export const ScaleOutRequestId = id("ScaleOutRequestId").brand<"ScaleOutRequestId">();
export type ScaleOutRequestId = z.infer<typeof ScaleOutRequestId>;
export const RuntimeFailureIncidentId = id("RuntimeFailureIncidentId").brand<"RuntimeFailureIncidentId">();
export type RuntimeFailureIncidentId = z.infer<typeof RuntimeFailureIncidentId>;
export const ScheduleId = id("ScheduleId").brand<"ScheduleId">();
export type ScheduleId = z.infer<typeof ScheduleId>;
export const ControlPlaneId = id("ControlPlaneId").brand<"ControlPlaneId">();
export type ControlPlaneId = z.infer<typeof ControlPlaneId>;
export const StepId = id("StepId").brand<"StepId">();
export type StepId = z.infer<typeof StepId>;
export const EventId = id("EventId").brand<"EventId">();
export type EventId = z.infer<typeof EventId>;

/**
 * ForensicsId is deterministic so a retried recovery cannot create a second record:
 * `runtime-recovery:<ExecutionId>:<SharedRunId>:<LocalRunId>` (in-flight) or
 * `runtime-recovery:local-queued:<SharedRunId>:<LocalRunId>`. Each part is an id as above. `:` is
 * legal in NATS subjects, so the ForensicsId is used directly as the id token of
 * `drover.forensics.<tenant>.<forensicsId>.<event>`; it never appears in Kubernetes names.
 */
const ID_PART = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
export const FORENSICS_ID_PATTERN = new RegExp(`^runtime-recovery:${ID_PART}:${ID_PART}:${ID_PART}$`);
export const ForensicsId = z
  .string()
  .min(1)
  .max(260)
  .regex(
    FORENSICS_ID_PATTERN,
    "ForensicsId must be runtime-recovery:<ExecutionId>:<SharedRunId>:<LocalRunId> or runtime-recovery:local-queued:<SharedRunId>:<LocalRunId>",
  )
  .brand<"ForensicsId">()
  .describe("ForensicsId");
export type ForensicsId = z.infer<typeof ForensicsId>;

/** `pid:<pid>:<startTicks>` for process hosts, `pod:<uid>` for Kubernetes hosts. */
export const HostIncarnation = z
  .string()
  .regex(/^(pid:\d+:\d+|pod:[a-z0-9-]+)$/, "HostIncarnation must be pid:<pid>:<start> or pod:<uid>")
  .brand<"HostIncarnation">()
  .describe("HostIncarnation");
export type HostIncarnation = z.infer<typeof HostIncarnation>;

/** True when `value` is a valid id (same rule as the schemas), without throwing. */
export function isSubjectSafeId(value: string): boolean {
  return value.length > 0 && value.length <= ID_MAX_LENGTH && ID_PATTERN.test(value);
}

/** The ForensicsId of an in-flight execution's recovery; deterministic in its inputs. */
export function inFlightForensicsId(
  executionId: ExecutionId,
  sharedRunId: SharedRunId,
  localRunId: LocalRunId,
): ForensicsId {
  return ForensicsId.parse(`runtime-recovery:${executionId}:${sharedRunId}:${localRunId}`);
}

/** The ForensicsId of a dispatched-but-never-started run's recovery; deterministic in its inputs. */
export function localQueuedForensicsId(sharedRunId: SharedRunId, localRunId: LocalRunId): ForensicsId {
  return ForensicsId.parse(`runtime-recovery:local-queued:${sharedRunId}:${localRunId}`);
}
