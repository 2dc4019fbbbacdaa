import { z } from "zod";
import { defineEvent } from "./define-event.ts";
import { StepId } from "./ids.ts";
import { WaitName } from "./wait.ts";

const sha256 = z.string().regex(/^[a-f0-9]{64}$/);

/**
 * A signal for a run's wait (docs/control-flow.md "Waits"), appended by the API on the run
 * (conditionally on the run's last sequence; the first signal of a name is the only one). `by` is the
 * principal of the verified bearer token, never the body: only the API may write this subject. It is
 * kept until the wait opens; the runtime steps over it like a cancel request.
 */
export const RunSignalReceived = defineEvent("run", "signal-received", () =>
  z
    .object({
      name: WaitName,
      by: z.string().min(1).max(200).describe("tenant:<tenantId>[:token:<name>], from the bearer token"),
      signalId: z.string().min(1).max(128).optional().describe("the sender's idempotency key"),
      payload: z.json(),
      payloadDigest: sha256.describe("sha256 of the payload's canonical JSON"),
    })
    .strict(),
);

/** A wait step opened: the durable deadline a resumed execution keeps (journaled before the step waits). */
export const ExecWaitOpened = defineEvent("exec", "wait-opened", () =>
  z.object({ stepId: StepId, name: WaitName, timeoutAt: z.iso.datetime() }).strict(),
);

/**
 * How a wait ended, journaled before its step settles: by a signal (the run's `signal-received` at
 * `signalSeq`, its verified principal and payload digest), or by its timeout.
 */
export const ExecWaitResolved = defineEvent("exec", "wait-resolved", () =>
  z
    .object({
      stepId: StepId,
      name: WaitName,
      by: z.enum(["signal", "timeout"]),
      principal: z.string().min(1).max(200).optional(),
      payloadDigest: sha256.optional(),
      signalSeq: z.number().int().positive().optional(),
      signalId: z.string().min(1).max(128).optional(),
    })
    .strict(),
);
