import { z } from "zod";
import { EventId, HostIncarnation, RuntimeInstanceId, TenantId } from "./ids.ts";

/** Who wrote an event: the service and its instance, and for runtime writes the host incarnation and owner epoch. */
export const Writer = z
  .object({
    service: z
      .enum([
        "api",
        "admission",
        "provisioner",
        "capacity",
        "recovery",
        "runtime",
        "forensics",
        "cli",
        "test",
        "producer",
        "scheduler",
      ])
      .describe("writing service (`producer`: a trusted producer publishing straight to JetStream)"),
    instanceId: z.string().min(1).max(128).describe("the writing process instance"),
    runtimeInstanceId: RuntimeInstanceId.optional().describe("set when a runtime instance writes"),
    hostIncarnation: HostIncarnation.optional().describe("set when a runtime instance writes"),
    epoch: z.number().int().nonnegative().optional().describe("execution owner epoch of a runtime write"),
  })
  .strict();
export type Writer = z.infer<typeof Writer>;

/**
 * The envelope every event carries. `type` is `<aggregate>.<event>` (e.g. `run.submitted`), the
 * same pair the subject ends with. `occurredAt` is the writer's clock, for humans only: order is
 * the stream sequence. `data` is validated by the event's own schema (see events.ts).
 */
export const EnvelopeBase = z
  .object({
    eventId: EventId,
    type: z
      .string()
      .regex(/^[a-z]+\.[a-z0-9-]+$/)
      .describe("<aggregate>.<event>"),
    schemaVersion: z.number().int().positive().describe("schema version of data"),
    occurredAt: z.iso.datetime().describe("writer clock, ISO 8601 UTC"),
    tenantId: TenantId.optional().describe("set when the aggregate has a tenant"),
    correlationId: z.string().min(1).max(128).describe("the run/request this event belongs to"),
    causationId: z.string().min(1).max(260).describe("the event or command that caused this one"),
    writer: Writer,
  })
  .strict();
export type EnvelopeBase = z.infer<typeof EnvelopeBase>;
