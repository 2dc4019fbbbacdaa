import type { RunPageEntry } from "../../../contracts/read-models.ts";
import {
  isFiltered,
  matches,
  MAX_SCAN,
  pagesFor,
  runSummary,
  type RunFilter,
  type RunSummary,
} from "../domain/run-list.ts";
import type { ReadModels } from "./read-models.ts";

export interface RunPage {
  readonly runs: RunSummary[];
  /** The next (older) page's cursor; absent on the last page. */
  readonly next?: string;
}

/**
 * A page of the tenant's runs, newest first, from the run-list read model (see
 * contracts/read-models.ts `RUN_PAGE_SIZE`): the tenant's count, the one or two list pages that
 * hold the wanted ordinals, then each run by `_id` — O(limit) reads, however many runs the tenant
 * has. With a status or label filter it reads the list backwards until `limit` runs match or
 * {@link MAX_SCAN} runs were looked at, and answers with a `next` to continue from. `since` stops
 * the walk at the first older run (no `next`).
 */
export async function listRuns(
  rm: ReadModels,
  tenantId: string,
  filter: RunFilter,
  limit: number,
  cursor: number | undefined,
): Promise<RunPage> {
  let upper = Math.min(cursor ?? Number.MAX_SAFE_INTEGER, await rm.runCount(tenantId));
  const runs: RunSummary[] = [];
  let scanned = 0;
  const filtered = isFiltered(filter);
  while (upper > 0 && runs.length < limit && scanned < MAX_SCAN) {
    const from = Math.max(0, upper - (filtered ? Math.min(limit * 4, MAX_SCAN - scanned) : limit - runs.length));
    const entries = (await rm.runPages(tenantId, pagesFor(from, upper)))
      .flatMap((p) => p.runs)
      .filter((e) => e.ordinal >= from && e.ordinal < upper)
      .sort((a, b) => b.ordinal - a.ordinal);
    const fresh = filter.sinceMs === undefined ? entries : entries.filter((e) => Date.parse(e.at) >= filter.sinceMs!);
    const docs = await rm.runsById(
      tenantId,
      fresh.map((e) => e.sharedRunId),
    );
    const byId = new Map(docs.map((d) => [d.sharedRunId, d]));
    const take = (e: RunPageEntry): boolean => {
      const doc = byId.get(e.sharedRunId);
      if (doc && matches(filter, doc)) runs.push(runSummary(doc, e));
      upper = e.ordinal;
      return runs.length < limit;
    };
    fresh.every(take);
    scanned += fresh.length;
    if (runs.length >= limit) break;
    if (fresh.length < entries.length) return { runs };
    upper = from;
  }
  return upper > 0 ? { runs, next: String(upper) } : { runs };
}
