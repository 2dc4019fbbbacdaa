import { describe, expect, it } from "vitest";
import { SubmissionPace } from "../../../contracts/index.ts";
import { paceSubmission, submissionRateLimited } from "./submission-pace.ts";

// Pure logic: the pacing decision over numbers; proves no transport (test/int/api-abuse-limits.int.test.ts goes through the API).
const pace = SubmissionPace.parse({ queuedRunsAbove: 100, perSecond: 10, burst: 3 });

/** Submits at each time in order, carrying the TAT along; returns the outcomes. */
const run = (times: number[], queued: number) => {
  let tat: number | undefined;
  return times.map((t) => {
    const p = paceSubmission(tat, queued, t, pace);
    if (p.ok) tat = p.tatMs;
    return p;
  });
};

describe("paceSubmission (pure; no transport)", () => {
  it("paces nothing while the tenant's queue is at most queuedRunsAbove deep, and leaves the bucket full", () => {
    const outs = run(
      Array.from({ length: 50 }, () => 1_000),
      99,
    );
    expect(outs.every((o) => o.ok && o.tatMs === undefined)).toBe(true);
  });

  it("beyond that depth takes a burst at once, then one per 1/perSecond, and says how long to wait", () => {
    const outs = run([1_000, 1_000, 1_000, 1_000], 100);
    expect(outs.map((o) => o.ok)).toEqual([true, true, true, false]);
    // the 4th token is due when the TAT (1 300) is back within the tolerance (200 ms): at 1 100
    expect(outs[3]).toEqual({ ok: false, retryAfterMs: 100 });
    const later = paceSubmission(1_300, 100, 1_100, pace);
    expect(later).toEqual({ ok: true, tatMs: 1_400 });
    expect(paceSubmission(1_400, 100, 1_100, pace).ok).toBe(false);
  });

  it("admits perSecond on average over a long deep queue, never more than burst at once", () => {
    // 1 000 tries 1 ms apart (999 ms): the burst at once, then one every 100 ms (the next is due at 11 000)
    const outs = run(
      Array.from({ length: 1_000 }, (_, i) => 10_000 + i),
      500,
    );
    expect(outs.filter((o) => o.ok)).toHaveLength(3 + 9);
  });

  it("waits at least 1 ms and its refusal carries the wait in ms and whole seconds (Retry-After)", () => {
    const e = submissionRateLimited("t-a", 250, 1_234, pace);
    expect(e.code).toBe("submission-rate-limited");
    expect(e.details).toMatchObject({ queuedRuns: 250, retryAfterMs: 1_234, retryAfterSeconds: 2, perSecond: 10 });
    expect(submissionRateLimited("t-a", 250, 1, pace).details.retryAfterSeconds).toBe(1);
  });
});
