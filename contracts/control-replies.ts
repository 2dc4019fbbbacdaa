import { z } from "zod";
import { RuntimeInstanceId } from "./ids.ts";

/**
 * The reply to `<prefix>-ctl.<controlPlaneId>.capacity.rebuild` (sent by the capacity service once
 * the view is rebuilt from stream sequence 1, read by `drover capacity-rebuild`): the facts of the
 * rebuilt view, or why the rebuild failed.
 */
export const CapacityRebuildReply = z.discriminatedUnion("ok", [
  z
    .object({
      ok: z.literal(true),
      /** The runtimes of this control plane in the view after the rebuild, sorted. */
      runtimes: z.array(RuntimeInstanceId),
      /** Runtime events folded by the rebuild (from stream sequence 1) and the last one's stream sequence (0 = none). */
      eventsFolded: z.number().int().nonnegative(),
      lastSeq: z.number().int().nonnegative(),
      /** Heartbeats folded (the last one per runtime). */
      heartbeatsFolded: z.number().int().nonnegative(),
      ms: z.number().int().nonnegative(),
    })
    .strict(),
  z.object({ ok: z.literal(false), error: z.string() }).strict(),
]);
export type CapacityRebuildReply = z.infer<typeof CapacityRebuildReply>;

/** The forensics service's answer to `drover-ctl.<controlPlaneId>.forensics.rebuild` (services/forensics/shell/control.ts). */
export const ForensicsRebuildReply = z.discriminatedUnion("ok", [
  z.object({ ok: z.literal(true), position: z.number().int().min(0) }),
  z.object({ ok: z.literal(false), error: z.string() }),
]);
export type ForensicsRebuildReply = z.infer<typeof ForensicsRebuildReply>;
