import { staleHeartbeatMsOf, tenantSettingsOf } from "../../../contracts/index.ts";
import { deployedVersions } from "../../../platform/worker-deploys.ts";
import { decidePlacement } from "../domain/placement.ts";
import { isPlaceable } from "../domain/run-decider.ts";
import { readCandidates } from "./candidates.ts";
import type { AdmissionDeps } from "./deps.ts";
import { deployedVersionFor } from "./deployed-version.ts";
import { PassBudget } from "./pass-budget.ts";
import { handle, RESUMES_BESIDE } from "./placer.ts";
import type { IndexedRun } from "./run-index.ts";
import { startSend, type AdmissionState, type Send } from "./sender.ts";
import { trace, tracing } from "./trace.ts";

/**
 * A resume pass (issue 15, P=20): run when the capacity view announces a runtime while a full pass is
 * in flight. A resume (a run requeued for resume, its replacement asked for it) used to wait for that
 * pass and then for the next one's turn: at P=20 its `admitted` came ~0.9 s after the replacement's
 * capacity, nearly all of it admission's own queue (a pass waited a median 0.39 s for the one before
 * it, then ran 0.46 s). This pass reads the view afresh and places only the resumes it now has a
 * place for, beside the pass in flight; everything else (resumes still without a place, cancels, new
 * work) is left to the full passes, as before.
 *
 * Safe beside a full pass: a run is taken only when no pass or send of this replica holds it (the
 * `busy` set, checked and set with no await between), every decision is the same conditional append
 * (on the run's last sequence) as a full pass's, and slots are reserved in Redis, where a full pass's
 * older view finds a slot taken here full. Resumes take no quota claim, flow key nor fair-share
 * charge (recovery items), so the order and share of ordinary work are what the full passes make them.
 * Answers how many resumes it placed.
 */
export async function resumePass(deps: AdmissionDeps, state: AdmissionState): Promise<number> {
  const waiting = resumesWaiting(deps, state);
  if (waiting.length === 0) return 0;
  const now = deps.env.clock.now().getTime();
  const candidates = await readCandidates(
    deps.view,
    deps.reservations,
    now,
    staleHeartbeatMsOf(deps.config),
    state.beatAts,
  );
  const budget = new PassBudget(
    candidates,
    deps.index,
    deps.config.sharedRuntimeHeadroom,
    (t) => deps.index.work.queues.waitingOf(t),
    state.fair,
    deps.index.keptForReplaced(now), // never holds a recovery item back, counted for the full passes' budgets
  );
  // Its own per-tenant deploy reads and no probe: the full pass in flight owns `state.probe`.
  const own: AdmissionState = { ...state, deployed: deployedVersions(deps.store), probe: undefined };
  let placed = 0;
  // Oldest first, as many at once as a full pass places beside its slots; the rest wait for the next pass.
  const taken = resumesWaiting(deps, state)
    .sort((a, b) => a.sinceSeq - b.sinceSeq || (a.sharedRunId < b.sharedRunId ? -1 : 1))
    .slice(0, RESUMES_BESIDE);
  await Promise.all(
    taken.map(async (r) => {
      const k = key(r);
      if (state.busy.has(k) || !(await placeable(deps, own, r, budget, now))) return;
      if (state.busy.has(k)) return; // taken by the full pass while the deploy was read
      state.busy.add(k);
      let send: Send | undefined;
      try {
        send = await handle(deps, r, candidates, budget, now, 0, own);
      } catch (e) {
        deps.log.error({ run: r.sharedRunId, err: String(e) }, "resume placement failed; retried next pass");
      } finally {
        if (send) {
          placed++;
          startSend(deps, state, r, send);
        } else state.busy.delete(k);
      }
    }),
  );
  if (tracing)
    trace({ ev: "resume-pass", start: now, ms: deps.env.clock.now().getTime() - now, placed, taken: taken.length });
  return placed;
}

/** Resumes waiting for a place: requeued for resume (or queued since), no cancel, not held by a pass or a send. */
export function resumesWaiting(deps: AdmissionDeps, state: AdmissionState): IndexedRun[] {
  const out: IndexedRun[] = [];
  for (const r of deps.index.work.side)
    if (
      r.state.resume !== undefined &&
      isPlaceable(r.state) && // requeued for resume, or queued since for want of a place; no cancel
      !r.invalid &&
      !state.busy.has(key(r))
    )
      out.push(r);
  return out;
}

/** Whether the view read has a place for the resume now (the pure decision says `place`); else the full passes decide it. */
async function placeable(
  deps: AdmissionDeps,
  s: AdmissionState,
  r: IndexedRun,
  budget: PassBudget,
  now: number,
): Promise<boolean> {
  const candidates = budget.viewFor(r.tenantId, true);
  const deployedVersion = await deployedVersionFor(s.deployed, r, candidates);
  const p = decidePlacement(r, candidates, now, {
    tenant: tenantSettingsOf(deps.config, r.tenantId),
    dispatchTimeoutMs: deps.config.dispatchTimeoutMs,
    activeRuns: deps.index.activeCount(r.tenantId),
    ...(deployedVersion ? { deployedVersion } : {}),
  });
  return p.kind === "place";
}

const key = (r: IndexedRun) => `${r.tenantId}/${r.sharedRunId}`;
