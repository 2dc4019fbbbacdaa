import { createHash } from "node:crypto";
import { DroverError, type TenantId } from "../../../contracts/index.ts";
import { canonicalJson } from "../../../aggregates/step-inputs.ts";
import { RUN_PAGE_SIZE } from "../../../contracts/read-models.ts";
import {
  BULK_MAX_SCAN,
  bulkRunFilter,
  type BulkCancelBody,
  type BulkFilter,
  type BulkForkBody,
} from "../domain/bulk.ts";
import type { RunSummary } from "../domain/run-list.ts";
import { requestCancel } from "./cancel-run.ts";
import type { ApiDeps } from "./deps.ts";
import { forkRun } from "./fork-run.ts";
import { listRuns } from "./list-runs.ts";
import type { createSubmitter } from "./submit-run.ts";

/** What a bulk request did (or, dry, would do) to one run. */
export interface BulkItem {
  readonly sharedRunId: string;
  readonly status: string;
  readonly outcome?: string;
  readonly forkRunId?: string;
  readonly error?: { readonly code: string; readonly message: string };
}

export interface BulkAnswer {
  readonly dryRun: boolean;
  /** Runs that matched the filter in the part of the list this request covered. */
  readonly matched: number;
  readonly runs: BulkItem[];
  /** Where to continue (a later request with `cursor`); absent when the whole list was covered. */
  readonly next?: string;
}

const PARALLEL = 8;

/**
 * The runs matching a bulk filter, newest first, from the run-list read model: at most `limit`,
 * looking at no more than {@link BULK_MAX_SCAN} runs, with the cursor to continue from.
 */
export async function selectRuns(
  deps: ApiDeps,
  tenantId: TenantId,
  filter: BulkFilter,
  limit: number,
  cursor: string | undefined,
): Promise<{ runs: RunSummary[]; next?: string }> {
  const rm = deps.readModels;
  if (!rm)
    throw new DroverError("read-model-unavailable", "bulk requests select from the run list and MONGO_URL is not set");
  const f = bulkRunFilter(filter);
  const top = Math.min(cursor === undefined ? Number.MAX_SAFE_INTEGER : Number(cursor), await rm.runCount(tenantId));
  const runs: RunSummary[] = [];
  let next: string | undefined = String(top);
  do {
    const want = Math.min(RUN_PAGE_SIZE, limit - runs.length);
    const page = await listRuns(rm, tenantId, f, want, Number(next));
    for (const r of page.runs) if (f.untilMs === undefined || Date.parse(r.submittedAt ?? "") < f.untilMs) runs.push(r);
    next = page.next;
  } while (next !== undefined && runs.length < limit && top - Number(next) < BULK_MAX_SCAN);
  return next === undefined ? { runs } : { runs, next };
}

/** Runs `act` over `items`, {@link PARALLEL} at a time, keeping their order in the answer. */
async function each<T, R>(items: readonly T[], act: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let i = 0;
  const worker = async () => {
    for (let k = i++; k < items.length; k = i++) out[k] = await act(items[k]!);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, worker));
  return out;
}

const failed = (r: RunSummary, e: unknown): BulkItem => {
  const err = e as { code?: string; message?: string };
  if (typeof err.code !== "string") throw e;
  return { sharedRunId: r.sharedRunId, status: r.status, error: { code: err.code, message: err.message ?? "" } };
};

/**
 * Selects the runs, then (unless dry) acts on each, {@link PARALLEL} at a time: `act` answers what
 * it did; a DroverError it throws becomes that run's `error`.
 */
async function bulk(
  deps: ApiDeps,
  tenantId: TenantId,
  body: BulkCancelBody | BulkForkBody,
  act: (r: RunSummary) => Promise<Pick<BulkItem, "outcome" | "forkRunId">>,
): Promise<BulkAnswer> {
  const { runs, next } = await selectRuns(deps, tenantId, body.filter, body.limit, body.cursor);
  const items = body.dryRun
    ? runs.map((r): BulkItem => ({ sharedRunId: r.sharedRunId, status: r.status }))
    : await each(runs, async (r): Promise<BulkItem> => {
        try {
          return { sharedRunId: r.sharedRunId, status: r.status, ...(await act(r)) };
        } catch (e) {
          return failed(r, e);
        }
      });
  return { dryRun: body.dryRun, matched: runs.length, runs: items, ...(next === undefined ? {} : { next }) };
}

/**
 * `POST /v1/runs/bulk-cancel`: `run.cancel-requested` (recorded with `by`, the identity that asked)
 * on every selected run, each by the same conditional append as a single cancel. A run that ended
 * meanwhile is reported with its error, not counted as cancelled.
 */
export async function bulkCancel(
  deps: ApiDeps,
  tenantId: TenantId,
  body: BulkCancelBody,
  by: string,
  requestId: string,
): Promise<BulkAnswer> {
  return bulk(deps, tenantId, body, async (r) => ({
    outcome: await requestCancel(deps, tenantId, r.sharedRunId, by, body.reason, requestId),
  }));
}

/** The idempotency key of the fork of `sharedRunId` made by a bulk fork request (see BulkForkBody). */
export function bulkForkKey(body: BulkForkBody, sharedRunId: string): string {
  const base =
    body.idempotencyKey ??
    createHash("sha256")
      .update(
        canonicalJson({
          filter: body.filter,
          fromStep: body.fromStep,
          inputPatch: body.inputPatch ?? null,
          labels: body.labels ?? null,
        }),
      )
      .digest("hex")
      .slice(0, 32);
  return `bulk-fork:${base}:${sharedRunId}`;
}

/**
 * `POST /v1/runs/bulk-fork`: every selected run forked from `fromStep` like a single fork (its
 * `run.forked` records `by`), under a key derived per original run, so a repeated request answers
 * the same forks. A run that cannot be forked (not ended, upstream incomplete) is reported with its error.
 */
export async function bulkFork(
  deps: ApiDeps,
  submit: ReturnType<typeof createSubmitter>,
  tenantId: TenantId,
  body: BulkForkBody,
  by: string,
  requestId: string,
): Promise<BulkAnswer> {
  return bulk(deps, tenantId, body, async (r) => {
    const { run, created } = await forkRun(
      deps,
      submit,
      tenantId,
      r.sharedRunId,
      {
        fromStep: body.fromStep,
        idempotencyKey: bulkForkKey(body, r.sharedRunId),
        ...(body.inputPatch === undefined ? {} : { inputPatch: body.inputPatch }),
        ...(body.labels === undefined ? {} : { labels: body.labels }),
      },
      by,
      requestId,
    );
    return { outcome: created ? "forked" : "already-forked", forkRunId: run.sharedRunId! };
  });
}
