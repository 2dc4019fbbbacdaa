import { z } from "zod";
import { defineEvent } from "./define-event.ts";
import { RuntimeInstanceId, ScaleOutRequestId } from "./ids.ts";

/**
 * Quota events on `drover.quota.<tenant>.<runtime prefix>.<event>` (docs/decisions.md): one
 * aggregate per runtime prefix, the serialisation point of the tenant's runtime limit
 * (`maxRuntimeInstances`) across provisioner replicas. Each start of a runtime of the prefix — a
 * cold registration or a warm pool claim — carries `runtime-slot-taken` in the same atomic batch,
 * conditional on this aggregate's last sequence as it was before the roster that counted was read;
 * so two replicas that counted the same roster cannot both start one. A slot is given back by the
 * runtime ending (its own events): there is no release event, nothing to lose.
 */
export const QuotaRuntimeSlotTaken = defineEvent("quota", "runtime-slot-taken", () =>
  z
    .object({
      runtimeInstanceId: RuntimeInstanceId,
      scaleOutRequestId: ScaleOutRequestId,
      live: z.number().int().min(0).describe("live runtimes of the prefix the planner counted, without this one"),
      maxRuntimeInstances: z.number().int().min(0).describe("the limit the request carried"),
      warmPoolMember: z.string().min(1).max(63).optional().describe("the pool member claimed, on a warm start"),
    })
    .strict(),
);

export const QUOTA_EVENTS = [QuotaRuntimeSlotTaken] as const;
