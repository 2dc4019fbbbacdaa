import { z } from "zod";
import { defineEvent } from "./define-event.ts";
import { WorkerVersion } from "./tenant-settings.ts";

/**
 * Worker deploy events on `drover.worker.<tenant>.deploys.<event>` (docs/worker-versions.md "Deploys
 * as events"): one aggregate per tenant, so its last sequence orders the tenant's deploys. The
 * tenant's current worker version is the `version` of its last `deployed`. Each `deployed` is
 * appended conditionally on the aggregate's last sequence: two racing deploys conflict, and the
 * loser reads what landed before it decides again.
 */
export const WorkerDeployRequested = defineEvent("worker", "deploy-requested", () =>
  z
    .object({
      requestedBy: z.string().min(1).max(200).describe("the verified credential that asked (POST /v1/workers/deploy)"),
    })
    .strict(),
);
export const WorkerDeployed = defineEvent("worker", "deployed", () =>
  z
    .object({
      version: WorkerVersion,
      image: z.string().min(1).max(512).optional().describe("Kubernetes hosts: the digest reference the Pods run"),
      kinds: z
        .array(z.string().min(1).max(200))
        .max(256)
        .describe("the handlers the tenant's settings name (`worker.kinds`)"),
      requestedBy: z
        .string()
        .min(1)
        .max(200)
        .optional()
        .describe("the credential whose request this answers; absent: the provisioner's own announcement"),
      requestSeq: z
        .number()
        .int()
        .positive()
        .optional()
        .describe("the sequence of the `deploy-requested` this answers"),
      previous: WorkerVersion.optional().describe(
        "the version deployed before; absent: the tenant's first deploy by event",
      ),
    })
    .strict(),
);

export const WORKER_EVENTS = [WorkerDeployRequested, WorkerDeployed] as const;
