import { z } from "zod";
import { RUN_PAGE_SIZE, type RunDoc, type RunPageEntry } from "../../../contracts/read-models.ts";

/** Runs a filtered listing looks at per request before it answers with what it found and a `next`. */
export const MAX_SCAN = 1_000;

/** `GET /v1/runs` query: filters are ANDed; `label` may repeat (`k=v`); `cursor` is a previous answer's `next`. */
export const ListRunsQuery = z
  .object({
    status: z.string().max(300).optional().describe("comma-separated run statuses, e.g. queued,started"),
    label: z
      .union([z.string().max(330), z.array(z.string().max(330)).max(16)])
      .optional()
      .describe("k=v; repeat for several labels"),
    since: z.iso.datetime({ offset: true }).optional().describe("only runs submitted at or after this time"),
    cursor: z
      .string()
      .regex(/^\d{1,12}$/, "cursor is the `next` of a previous page")
      .optional(),
    limit: z.coerce.number().int().min(1).max(RUN_PAGE_SIZE).default(20),
    tenant: z.string().max(200).optional(),
  })
  .strict();
export type ListRunsQuery = z.infer<typeof ListRunsQuery>;

export interface RunFilter {
  readonly statuses?: ReadonlySet<string>;
  readonly labels: readonly { readonly key: string; readonly value: string }[];
  readonly sinceMs?: number;
}

/** `k=v` label filters, split at the first `=` (a bare `k` means an empty value). */
export const parseLabels = (ls: readonly string[]): RunFilter["labels"] =>
  ls.map((l) => {
    const i = l.indexOf("=");
    return i < 0 ? { key: l, value: "" } : { key: l.slice(0, i), value: l.slice(i + 1) };
  });

/** The query's filters, parsed (`label` values split at the first `=`). */
export function runFilter(q: ListRunsQuery): RunFilter {
  const labels = parseLabels(q.label === undefined ? [] : Array.isArray(q.label) ? q.label : [q.label]);
  return {
    ...(q.status ? { statuses: new Set(q.status.split(",").map((s) => s.trim())) } : {}),
    labels,
    ...(q.since ? { sinceMs: Date.parse(q.since) } : {}),
  };
}

export const isFiltered = (f: RunFilter): boolean => f.statuses !== undefined || f.labels.length > 0;

export function matches(f: RunFilter, run: RunDoc): boolean {
  if (f.statuses && !f.statuses.has(run.status)) return false;
  return f.labels.every((l) => run.labels.some((x) => x.key === l.key && x.value === l.value));
}

/** The page numbers holding ordinals `[from, to)`, newest first. */
export function pagesFor(from: number, to: number): number[] {
  const out: number[] = [];
  if (to <= from) return out;
  for (let p = Math.floor((to - 1) / RUN_PAGE_SIZE); p >= Math.floor(from / RUN_PAGE_SIZE); p--) out.push(p);
  return out;
}

/** One row of the list. */
export const RunSummary = z.object({
  sharedRunId: z.string(),
  status: z.string(),
  dagName: z.string().nullable(),
  stepCount: z.number(),
  labels: z.record(z.string(), z.string()),
  submittedAt: z.string().nullable(),
  endedAt: z.string().nullable(),
  lastReason: z.object({ code: z.string(), detail: z.string() }).nullable(),
  cancelRequestedBy: z.string().nullable(),
  rerunOf: z.string().nullable(),
  reruns: z.array(z.string()),
});
export type RunSummary = z.infer<typeof RunSummary>;

export function runSummary(run: RunDoc, entry: RunPageEntry): RunSummary {
  return {
    sharedRunId: run.sharedRunId,
    status: run.status,
    dagName: run.dagName ?? null,
    stepCount: run.stepCount,
    labels: Object.fromEntries(run.labels.map((l) => [l.key, l.value])),
    submittedAt: run.submitted?.at ?? entry.at,
    endedAt: run.ended?.at ?? null,
    lastReason: run.lastReason ? { code: run.lastReason.code, detail: run.lastReason.detail } : null,
    cancelRequestedBy: run.cancelRequested?.by ?? null,
    rerunOf: run.rerunOf ?? null,
    reruns: [...(run.rerunIds ?? [])],
  };
}
