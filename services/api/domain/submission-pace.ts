import { DroverError, gcra, type SubmissionPace } from "../../../contracts/index.ts";

/** The outcome of pacing one submission: go on (with the tenant's new theoretical arrival time) or wait. */
export type PaceOutcome =
  { readonly ok: true; readonly tatMs: number | undefined } | { readonly ok: false; readonly retryAfterMs: number };

/**
 * Paces a tenant's new submission (pure). While the tenant has at most `queuedRunsAbove` runs
 * submitted and not yet started (`queuedRuns`, this one not counted) nothing is paced and the
 * bucket is left as it is, so a normal burst is never refused and a tenant whose queue drains meets
 * a full bucket. Beyond that depth the submission takes a GCRA token (`perSecond`, bursts of
 * `burst`); without one it waits `retryAfterMs`, the time until the next token.
 */
export function paceSubmission(
  tatMs: number | undefined,
  queuedRuns: number,
  nowMs: number,
  pace: SubmissionPace,
): PaceOutcome {
  if (queuedRuns < pace.queuedRunsAbove) return { ok: true, tatMs };
  const g = gcra(tatMs ?? nowMs, nowMs, pace.perSecond, pace.burst);
  return g.ok ? { ok: true, tatMs: g.tatMs } : { ok: false, retryAfterMs: Math.max(1, g.retryAtMs - nowMs) };
}

/** The refusal of a paced submission: 429 with the wait in whole seconds (Retry-After) and in ms. */
export function submissionRateLimited(
  tenantId: string,
  queuedRuns: number,
  retryAfterMs: number,
  pace: SubmissionPace,
) {
  return new DroverError(
    "submission-rate-limited",
    `tenant ${tenantId} has ${queuedRuns} runs queued (more than ${pace.queuedRunsAbove}); its submissions are paced to ${pace.perSecond}/s, retry in ${retryAfterMs} ms`,
    {
      details: {
        queuedRuns,
        queuedRunsAbove: pace.queuedRunsAbove,
        perSecond: pace.perSecond,
        burst: pace.burst,
        retryAfterMs,
        retryAfterSeconds: Math.ceil(retryAfterMs / 1000),
      },
    },
  );
}
