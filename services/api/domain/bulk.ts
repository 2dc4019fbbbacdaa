import { z } from "zod";
import { StepId, StepOutput } from "../../../contracts/index.ts";
import { parseLabels, type RunFilter } from "./run-list.ts";

/** Runs one bulk request acts on at most; the answer's `next` continues from where it stopped. */
export const BULK_MAX_RUNS = 500;
/** Runs one bulk request looks at at most (matching or not) before it answers with a `next`. */
export const BULK_MAX_SCAN = 5_000;

/**
 * Which runs a bulk request selects: the `GET /v1/runs` filters (ANDed) plus an upper time bound.
 * A filter is required: an empty one would select every run of the tenant, which is refused.
 */
export const BulkFilter = z
  .object({
    status: z.array(z.string().max(40)).max(20).optional().describe('run statuses, e.g. ["failed"]'),
    label: z.array(z.string().max(330)).max(16).optional().describe("k=v, ANDed"),
    since: z.iso.datetime({ offset: true }).optional().describe("submitted at or after"),
    until: z.iso.datetime({ offset: true }).optional().describe("submitted before"),
  })
  .strict()
  .refine(
    (f) => (f.status?.length ?? 0) + (f.label?.length ?? 0) > 0 || f.since !== undefined || f.until !== undefined,
    {
      message: "name at least one of status, label, since, until (an empty filter would select every run)",
    },
  );
export type BulkFilter = z.infer<typeof BulkFilter>;

const common = {
  filter: BulkFilter,
  dryRun: z.boolean().default(false).describe("count and list what would be acted on; change nothing"),
  limit: z.number().int().min(1).max(BULK_MAX_RUNS).default(BULK_MAX_RUNS).describe("act on at most this many runs"),
  cursor: z
    .string()
    .regex(/^\d{1,12}$/, "cursor is the `next` of a previous answer")
    .optional(),
};

/** `POST /v1/runs/bulk-cancel`. */
export const BulkCancelBody = z.object({ ...common, reason: z.string().max(500).default("") }).strict();
export type BulkCancelBody = z.infer<typeof BulkCancelBody>;

/**
 * `POST /v1/runs/bulk-fork`: every selected run forked from `fromStep` (see `POST /v1/runs/:id/fork`).
 * Each fork's idempotency key is derived from the bulk key and the original run, so repeating a
 * bulk request forks no run twice; without a key, the key is the digest of the request's filter and
 * fork fields (the same request is the same forks).
 */
export const BulkForkBody = z
  .object({
    ...common,
    fromStep: StepId,
    inputPatch: StepOutput.optional(),
    labels: z.record(z.string().min(1).max(63), z.string().max(256)).optional(),
    idempotencyKey: z.string().min(1).max(120).optional(),
  })
  .strict();
export type BulkForkBody = z.infer<typeof BulkForkBody>;

/** A bulk filter as the run list's filter (labels split at the first `=`), plus its upper bound. */
export function bulkRunFilter(f: BulkFilter): RunFilter & { readonly untilMs?: number } {
  return {
    ...(f.status?.length ? { statuses: new Set(f.status) } : {}),
    labels: parseLabels(f.label ?? []),
    ...(f.since ? { sinceMs: Date.parse(f.since) } : {}),
    ...(f.until ? { untilMs: Date.parse(f.until) } : {}),
  };
}
