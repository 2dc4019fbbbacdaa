import { z } from "zod";
import { defineEvent } from "./define-event.ts";
import { SharedRunId } from "./ids.ts";

/**
 * Flow key events on `drover.flowkey.<tenant>.<flowKeyId>.<event>` (docs/flow-control.md): the
 * aggregate of one resolved key value of one tenant. Admission appends `acquired` conditionally on
 * the key's last sequence, so two replicas deciding on the same count or the same theoretical
 * arrival time cannot both win; a holder releases the key by ending (its run's terminal event).
 */
export const FlowKeyAcquired = defineEvent("flowkey", "acquired", () =>
  z
    .object({
      name: z.string().min(1).max(63).describe("the tenant's flow key setting"),
      key: z.string().min(1).max(512).describe("the resolved key value, e.g. openai:gpt-4o"),
      sharedRunId: SharedRunId,
      at: z.iso.datetime().describe("the decision time the throttle counted"),
      tat: z.iso.datetime().optional().describe("the GCRA theoretical arrival time after this admission"),
      inFlight: z.number().int().min(0).describe("holders still running before this one, as the decider counted"),
    })
    .strict(),
);

export const FLOWKEY_EVENTS = [FlowKeyAcquired] as const;
