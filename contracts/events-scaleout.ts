import { z } from "zod";
import { defineEvent } from "./define-event.ts";
import { ControlPlaneId, RuntimeInstanceId, ScaleOutRequestId, TenantGroupId } from "./ids.ts";
import { Reason } from "./reason.ts";
import { HostProvider, IsolationMode, RuntimeSizing, Transport, WorkerVersion } from "./tenant-settings.ts";

/** Scale-out request events on `drover.scaleout.<tenant>.<requestId>.<event>`. */
export const ScaleOutRequested = defineEvent("scaleout", "requested", () =>
  z
    .object({
      requestId: ScaleOutRequestId,
      controlPlaneId: ControlPlaneId,
      dedupeKey: z.string().min(1).max(300).describe("control plane + tenant scope + prefix + reason"),
      reason: Reason,
      policy: z
        .object({
          isolationMode: IsolationMode,
          tenantGroupId: TenantGroupId.optional(),
          allowSharedFallback: z.boolean(),
          runtimeInstanceIdPrefix: z.string().min(1).max(31),
          maxRuntimeInstances: z.number().int().nonnegative(),
        })
        .strict(),
      sizing: RuntimeSizing,
      providerHint: HostProvider,
      transport: Transport,
      expiresAt: z.iso.datetime(),
      workerVersion: WorkerVersion.optional().describe(
        "start a runtime of this worker version (for runs pinned to it); absent: the tenant's current worker",
      ),
      replaces: RuntimeInstanceId.optional().describe(
        "the lost runtime this request replaces (recovery's replacement): it may take the warm pool members a first placement leaves",
      ),
    })
    .strict(),
);
export const ScaleOutObserved = defineEvent("scaleout", "observed", () =>
  z.object({ provisionerInstanceId: z.string().min(1).max(128) }).strict(),
);
export const ScaleOutFulfilled = defineEvent("scaleout", "fulfilled", () =>
  z.object({ runtimeInstanceId: RuntimeInstanceId }).strict(),
);
export const ScaleOutRejected = defineEvent("scaleout", "rejected", () =>
  z.object({ reason: Reason, runtimeInstanceId: RuntimeInstanceId.optional() }).strict(),
);
export const ScaleOutExpired = defineEvent("scaleout", "expired", () => z.object({}).strict());
export const ScaleOutCancelled = defineEvent("scaleout", "cancelled", () =>
  z.object({ reason: z.string().max(500).default("") }).strict(),
);

export const SCALEOUT_EVENTS = [
  ScaleOutRequested,
  ScaleOutObserved,
  ScaleOutFulfilled,
  ScaleOutRejected,
  ScaleOutExpired,
  ScaleOutCancelled,
] as const;
