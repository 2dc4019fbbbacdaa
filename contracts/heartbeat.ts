import { z } from "zod";
import { HostIncarnation, RuntimeInstanceId } from "./ids.ts";

/**
 * A runtime's heartbeat on `drover-hb.<runtimeInstanceId>` (HEARTBEATS stream): local facts only.
 * No endpoint, tenant or route: a runtime cannot know how the control plane reaches it.
 * `beat` is monotonic per host incarnation; the capacity fold orders by it, never by arrival.
 */
export const Heartbeat = z
  .object({
    type: z.literal("heartbeat"),
    runtimeInstanceId: RuntimeInstanceId,
    hostIncarnation: HostIncarnation,
    beat: z.number().int().nonnegative(),
    at: z.iso.datetime(),
    workers: z.number().int().nonnegative(),
    activeWorkers: z.number().int().nonnegative(),
    availableWorkers: z.number().int().nonnegative(),
    queuedRuns: z.number().int().nonnegative(),
    runningRuns: z.number().int().nonnegative(),
    availableSlots: z
      .number()
      .int()
      .nonnegative()
      .describe("maxConcurrentRuns + localQueueCapacity - runningRuns - queuedRuns (the local queue counts)"),
    paused: z.boolean(),
    draining: z.boolean(),
  })
  .strict();
export type Heartbeat = z.infer<typeof Heartbeat>;

/**
 * A heartbeat as the control plane stored it: `at` is when the stream stored it (the server's clock:
 * what staleness is judged by), `takenAt` the runtime's own `at` (its clock: the instant the beat's
 * counts are from, what a dispatch answer's time is compared with). Absent on a view written before
 * it was kept: nothing is then known to be in the beat, so every reservation counts.
 */
export type StoredHeartbeat = Heartbeat & { readonly takenAt?: string };
