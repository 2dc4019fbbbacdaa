import {
  LocalRunId,
  RuntimeInstanceId,
  tenantSettingsOf,
  staleHeartbeatMsOf,
  type DataOf,
} from "../../../contracts/index.ts";
import { assertNever } from "../../../contracts/assert-never.ts";
import { FairPull } from "../domain/fair-pull.ts";
import { takeFlowKeys } from "./flow-gate.ts";
import { decidePlacement, noCapacityReason, placementInFlight } from "../domain/placement.ts";
import { appendRunDecision } from "./append-run.ts";
import { readCandidates, type Placeable } from "./candidates.ts";
import { PassBudget } from "./pass-budget.ts";
import type { AdmissionDeps } from "./deps.ts";
import { claimQuota, settleQuota } from "./tenant-quota.ts";
import { cancelRun } from "./cancel.ts";
import { rejectInvalid } from "./reject-invalid.ts";
import { recordDispatch, resendIfUnknown } from "./dispatch.ts";
import { queueWithScaleOut } from "./scale-out.ts";
import type { IndexedRun } from "./run-index.ts";
import { deployedVersionFor } from "./deployed-version.ts";
import { deployedVersions } from "../../../platform/worker-deploys.ts";
import { startSend, type AdmissionState, type Send } from "./sender.ts";
import { placeAll } from "./place-all.ts";
import { timed, type PassProbe } from "./pass-probe.ts";
import type { ReserveOutcome } from "../../../platform/reservations.ts";
import { trace, traced, tracing } from "./trace.ts";

export type { AdmissionState } from "./sender.ts";

/** Resume placements a pass runs beside its PARALLEL slots: a dead runtime's in-flight executions at once. */
export const RESUMES_BESIDE = 64;

/** How often a pass looks at placements awaiting confirmation (they go stale after 2 × dispatchTimeoutMs). */
const PLACED_SCAN_MS = 100;

/**
 * One admission pass (docs/security.md "Floods"): first the runs that are not new work (recovery
 * items, oldest first, a tenant's resumes ahead of the rest; cancels, invalid submissions and stale
 * placements), then new work pulled lazily from the per-tenant queues in weighted fair order
 * (virtual time kept across passes, fair-pull.ts), at most PARALLEL runs at once (resumes beside
 * them), until no tenant has a run left that could change: a blocked tenant's runs that would only be
 * queued again as they are are skipped a bucket at a time, so a pass costs its placements and a look
 * at each tenant, not one per queued run. A tenant's quota counts its placements in flight, so it holds within a
 * replica. Slot reservations in Redis keep concurrent placements (and replicas) from over-committing
 * a runtime; conditional appends keep two deciders from moving one run. Safe to run again at any
 * time: every step is idempotent.
 *
 * The pass decides and records (reservation, admitted, dispatched); the runtime commands run outside
 * it, so a runtime slow to answer (up to dispatchTimeoutMs) holds up its own run, never the next pass
 * and so never another tenant's runs.
 */
export async function admissionPass(deps: AdmissionDeps, state: AdmissionState): Promise<void> {
  const { busy } = state;
  const now = deps.env.clock.now().getTime();
  const isResume = (r: IndexedRun) => r.state.resume !== undefined;
  // Not new work: every one is looked at (their number grows with the runs placed, not the backlog),
  // except placements young enough that there is nothing to do for them yet (unless cancelled).
  const waits = (r: IndexedRun) =>
    !r.state.cancelRequested && placementInFlight(r, now, deps.config.dispatchTimeoutMs) !== undefined;
  // Placements awaiting confirmation go stale only after seconds: looked at every PLACED_SCAN_MS.
  const work = deps.index.work;
  const last = state.placedScannedMs ?? -Infinity;
  const scanPlaced = now - last >= PLACED_SCAN_MS || now < last;
  if (scanPlaced) state.placedScannedMs = now;
  // Of those, only the ones older than the staleness bound can need anything (placementInFlight):
  // a numeric test first, since in a burst `placed` holds every run in flight.
  const staleAfter = 2 * deps.config.dispatchTimeoutMs;
  const placedDue: IndexedRun[] = [];
  if (scanPlaced) for (const r of work.placed) if (now - r.sinceMs > staleAfter) placedDue.push(r);
  const side = [...work.side, ...placedDue]
    .filter((r) => !busy.has(key(r)) && !waits(r))
    .sort(
      (a, b) =>
        Number(isResume(b)) - Number(isResume(a)) ||
        Number(b.state.recoveryPending) - Number(a.state.recoveryPending) ||
        a.sinceSeq - b.sinceSeq ||
        (a.sharedRunId < b.sharedRunId ? -1 : 1),
    );
  // Nothing to look at (no run waits in a queue, none needs anything else): the capacity view is not
  // read. Most passes are such (a run's admitted, dispatched, started and end each start one), and
  // each read was two Redis round trips (issue 15). The blocks found so far are kept as they are:
  // the next pass with work adopts them against the view it reads, as it would have.
  if (side.length === 0 && work.queues.size === 0) return;
  const staleMs = staleHeartbeatMsOf(deps.config);
  const candidates = await timed(
    state.probe,
    "candidates",
    readCandidates(deps.view, deps.reservations, now, staleMs, state.beatAts),
  );
  if (tracing) trace({ ev: "read", start: now });
  const budget = new PassBudget(
    candidates,
    deps.index,
    deps.config.sharedRuntimeHeadroom,
    (t) => deps.index.work.queues.waitingOf(t),
    state.fair, // a kept place only in the tenant's turn (headroom.ts)
    deps.index.keptForReplaced(now), // a replacement's places for what it replaces (replacement-hold.ts)
  );
  state.deployed = deployedVersions(deps.store); // each tenant's deploys read at most once per pass
  // A tenant found blocked by the last passes, with still no runtime that may take its runs, is not
  // looked at again (its new submissions aside) until a place shows up or the carry expires.
  budget.adopt(state.blocks, now);
  const fair = new FairPull(deps.index.work.queues, {
    weightOf: (t) => tenantSettingsOf(deps.config, t).weight,
    startOf: (t) => state.fair.startOf(t),
    priorityCap: (t) => tenantSettingsOf(deps.config, t).maxRunPriority,
    skipsBucket: (t, b) => budget.skipsBucket(t, b),
    excluded: (r) => busy.has(key(r)),
  });
  let sideAt = 0;
  const take = () => side[sideAt++] ?? fair.next();
  // Placements of one tenant in flight in this pass: the quota counts them with the tenant's active
  // runs, so parallel decisions cannot overshoot it within a replica.
  const inFlight = new Map<string, number>();
  state.flow.held = new Map(); // the priorities held back on a flow key, per pass
  // A tenant's interrupted executions go first, and its other runs are sent only once the resume
  // was answered: its replacement runtime then queues the resume ahead of redispatched and new runs
  // instead of racing them for its first free worker (a P=1 proof saw a resume wait 700 ms behind a
  // run dispatched in the same ms). Per tenant, so one tenant's slow resume never holds another's runs.
  const placeOne = async (r: IndexedRun) => {
    if (!isResume(r) && (state.resuming.get(r.tenantId) ?? 0) > 0) return state.probe?.count("after-resume"); // next pass, after the answer
    if (budget.skips(r)) return state.probe?.count("blocked"); // its tenant is blocked: it would only be queued again as it is
    const k = key(r);
    if (busy.has(k)) return;
    busy.add(k);
    if (traced(r.tenantId)) trace({ ev: "taken", run: r.sharedRunId, pass: now });
    inFlight.set(r.tenantId, (inFlight.get(r.tenantId) ?? 0) + 1);
    let send: Send | undefined;
    try {
      send = await handle(deps, r, candidates, budget, now, (inFlight.get(r.tenantId) ?? 1) - 1, state);
    } catch (e) {
      deps.log.error({ run: r.sharedRunId, err: String(e) }, "admission of run failed; retried next pass");
    } finally {
      inFlight.set(r.tenantId, (inFlight.get(r.tenantId) ?? 1) - 1);
      if (send) startSend(deps, state, r, send);
      else busy.delete(k);
    }
  };
  // A pass yields (state.yieldWanted) only once every run that is not new work was taken: those are
  // looked at by every pass, and a pass cut short among them would never reach new work.
  const stop = () => sideAt >= side.length && (state.yieldWanted?.() ?? false);
  // A tenant's other runs wait for the placements of its resumes in this pass, but not in one of
  // the PARALLEL slots (at P=20 such waits held slots up to 1.9 s, and other tenants' runs behind
  // them): each is placed once they end (placeOne finds its tenant resuming, nearly always, and
  // leaves it to the pass the resume's answer starts), and the pass waits for it before it ends.
  const resumes = new Map<string, Promise<void>[]>();
  const afterResumes: Promise<void>[] = [];
  // Resumes are placed beside the PARALLEL slots (up to RESUMES_BESIDE at once): with 16 slots, W3's
  // last 4 of 20 resumes were admitted a placement round later (median 166 ms; issue 15).
  let resumesBeside = 0;
  const pool = placeAll(take, stop, async (r) => {
    if (!isResume(r)) {
      const placing = resumes.get(r.tenantId);
      if (placing) afterResumes.push(Promise.all(placing).then(() => placeOne(r)));
      else await placeOne(r);
      return;
    }
    const placed = placeOne(r);
    resumes.set(r.tenantId, [...(resumes.get(r.tenantId) ?? []), placed]);
    if (resumesBeside >= RESUMES_BESIDE) return placed;
    resumesBeside++;
    afterResumes.push(placed.finally(() => resumesBeside--));
  });
  // A submission of a tenant under its fair share while the pass works through a flood's batch:
  // the tenant joins the pull (fair-pull.ts `join`) and one more placement starts for it at once,
  // beside the PARALLEL in flight, instead of after the pass (docs/security.md "Floods"). Only if
  // the pass's view has a place it may take: else the next pass, on a fresh view, decides it
  // (taken now, it would be queued for a place freed since the pass began).
  work.onSubmitted = (tenantId) => {
    const place = budget.viewFor(tenantId).some((c) => c.canAcceptRun);
    const joined = place && fair.join(tenantId);
    if (traced(tenantId)) trace({ ev: joined ? "express" : "no-join", pass: now, place });
    if (joined) queueMicrotask(pool.express);
  };
  try {
    await pool.done;
    await timed(state.probe, "resumes-first", Promise.all(afterResumes));
  } finally {
    work.onSubmitted = undefined;
  }
  state.blocks = budget.carried(now);
}

const GONE = new Set(["suspected", "fenced", "retired"]);
const key = (r: IndexedRun) => `${r.tenantId}/${r.sharedRunId}`;

/** Executes the placement decision for one run; returns the runtime command to send, if any. */
async function handle(
  deps: AdmissionDeps,
  r: IndexedRun,
  all: Placeable[],
  budget: PassBudget,
  now: number,
  othersInFlight: number,
  { fair, flow, deployed, probe }: AdmissionState,
): Promise<Send | undefined> {
  if (r.state.cancelRequested) return timed(probe, "cancel", cancelRun(deps, r, all, now));
  const tenant = tenantSettingsOf(deps.config, r.tenantId);
  // Whether this is a recovery item is decided now: the fold may reach the run's `started` (which
  // clears it) before the attempt settles, and a recovery item never claimed.
  const recovery = r.state.recoveryPending;
  const candidates = budget.viewFor(r.tenantId, recovery);
  const deployedVersion = await timed(probe, "deployed", deployedVersionFor(deployed, r, candidates));
  const p = decidePlacement(r, candidates, now, {
    tenant,
    dispatchTimeoutMs: deps.config.dispatchTimeoutMs,
    activeRuns: deps.index.activeCount(r.tenantId) + othersInFlight,
    ...(deployedVersion ? { deployedVersion } : {}),
  });
  probe?.count(p.kind);
  // Why a run that waits for capacity sees none: the reasons of the tenant's runtimes still coming up or live.
  if (probe && p.kind === "queue-with-scale-out")
    for (const c of candidates) if (!GONE.has(c.status)) for (const why of c.reasons) probe.count(`why:${why}`);
  switch (p.kind) {
    case "wait":
      return undefined;
    case "reject-invalid":
      await rejectInvalid(deps, r);
      return undefined;
    case "finish-dispatch": {
      // Admitted but never dispatched: the replica that admitted it died (or this is its own earlier attempt).
      const placed = r.state.placement!.runtimeInstanceId;
      return timed(
        probe,
        "dispatched",
        recordDispatch(deps, r, p.target ?? { runtimeInstanceId: placed, transport: "http" }),
      );
    }
    case "check-dispatched":
      // Dispatched long ago and never started: the sender may have died before the command left.
      r.checkedMs = now;
      return resendIfUnknown(deps, r, p.target);
    case "reject":
    case "queue":
      if (p.kind === "queue") budget.block(r, p.reason.code);
      await timed(
        probe,
        "append-queued",
        appendRunDecision(
          deps,
          r,
          p.kind === "reject" ? { kind: "Reject", reason: p.reason } : { kind: "QueueGlobally", reason: p.reason },
          "quota",
        ),
      );
      return undefined;
    case "place": {
      // The tenant's quota across admission replicas, then flow keys (docs/flow-control.md): more
      // reasons a placeable run waits, in the same pass.
      // Without a flow key to take between them, the claim and the first candidate's slot
      // reservation are one Redis call (tenant-claims.ts claimAndReserve); `early` is that candidate,
      // held in the pass budget from here.
      const early =
        deps.claims && !recovery && tenant.flowKeys.length === 0
          ? p.tryInOrder.find((c) => budget.claim(c, r.tenantId))
          : undefined;
      let claimed;
      if (traced(r.tenantId)) trace({ ev: "claim-call", run: r.sharedRunId });
      try {
        claimed = await timed(probe, "quota-claim", claimQuota(deps, r, tenant, now, early && slotOf(deps, early)));
      } finally {
        if (early && !claimed?.reserved) budget.settle(early, r.tenantId, false);
      }
      const { over: overQuota, reserved } = claimed;
      if (traced(r.tenantId)) trace({ ev: "claimed", run: r.sharedRunId });
      const order = reserved && early ? p.tryInOrder.slice(p.tryInOrder.indexOf(early)) : p.tryInOrder;
      if (overQuota) {
        budget.block(r, overQuota.reason.code);
        const decision =
          overQuota.kind === "reject"
            ? ({ kind: "Reject", reason: overQuota.reason } as const)
            : ({ kind: "QueueGlobally", reason: overQuota.reason } as const);
        await appendRunDecision(deps, r, decision, "quota");
        return undefined;
      }
      let placed = false;
      // The claim is confirmed at the run's `admitted` by the send, in the same Redis call as its
      // slot's extend once the runtime answered (dispatch.ts; one Redis round trip per placement
      // less, issue 15); settled here when there is nothing to send.
      let admittedSeq: number | undefined;
      const defer = deps.claims !== undefined && !recovery ? now : undefined;
      let handedOff = false;
      try {
        const keys = await timed(probe, "flow-keys", takeFlowKeys(deps, flow, r, tenant, now));
        if (!keys.ok) {
          await appendRunDecision(deps, r, { kind: "QueueGlobally", reason: keys.reason }, `flow:${r.sharedRunId}`);
          return undefined;
        }
        for (const c of order) {
          const pre = reserved && c === early ? reserved : undefined; // reserved with the claim, held in the budget
          if (!pre && !budget.claim(c, r.tenantId, recovery)) continue; // taken by a parallel placement of this pass
          let full = false;
          try {
            const send = await placeOn(deps, r, c, p.snapshot, now, (seq) => (admittedSeq = seq), pre, defer, probe);
            handedOff = defer !== undefined && typeof send === "function";
            // New work placed on a shared runtime counts against its tenant's fair share.
            if (send && send !== "full" && c.isolationMode === "shared" && !recovery)
              fair.charge(r.tenantId, tenant.weight);
            // Placed, or lost to another replica's decision (which holds the same claim): kept either way.
            placed = send !== "full";
            if (send !== "full") return send;
            full = true;
          } finally {
            budget.settle(c, r.tenantId, full);
          }
        }
      } finally {
        if (!handedOff) await timed(probe, "quota-settle", settleQuota(deps, r, placed, now, recovery, admittedSeq));
      }
      budget.block(
        r,
        ...(await queueWithScaleOut(deps, r, tenant, candidates, now, noCapacityReason(candidates, tenant), probe)),
      );
      return undefined;
    }
    case "queue-with-scale-out":
      budget.block(r, ...(await queueWithScaleOut(deps, r, tenant, candidates, now, p.reason, probe)));
      return undefined;
    default:
      return assertNever(p);
  }
}

/** The slot a placement on `c` reserves: what its last heartbeat left free, held 3 dispatch timeouts at most. */
const slotOf = (deps: AdmissionDeps, c: Placeable) => ({
  runtimeInstanceId: c.runtimeInstanceId,
  slots: c.heartbeatSlots,
  ttlMs: 3 * deps.config.dispatchTimeoutMs,
  beatAt: c.beatTakenAt,
});

/**
 * Reserves a slot of `c` for the run (unless `reserved` says how that went already) and records the placement; "full" when Redis has none left.
 * `admitted` is called with its sequence once the run's `admitted` is in the log (before `dispatched` is appended).
 * With `claimedAt` (when the tenant's quota claim was made), the send returned confirms that claim (dispatch.ts).
 */
async function placeOn(
  deps: AdmissionDeps,
  r: IndexedRun,
  c: Placeable,
  snapshot: readonly { runtimeInstanceId: string; rank: number; why: string }[],
  now: number,
  admitted: (seq: number) => void,
  reserved?: ReserveOutcome,
  claimedAt?: number,
  probe?: PassProbe,
): Promise<Send | "full" | undefined> {
  const slot = slotOf(deps, c);
  const outcome =
    reserved ??
    (await timed(
      probe,
      "reserve",
      deps.reservations.reserve(c.runtimeInstanceId, r.sharedRunId, slot.slots, slot.ttlMs, now, slot.beatAt),
    ));
  if (outcome === "full") return "full";
  // Parsed, not cast: the ids come from the capacity view and the id source, outside the type system.
  const data: DataOf<"run.admitted"> = {
    runtimeInstanceId: RuntimeInstanceId.parse(c.runtimeInstanceId),
    localRunId: LocalRunId.parse(deps.env.ids.next("lr")),
    reservationId: `${c.runtimeInstanceId}/${r.sharedRunId}`,
    candidates: snapshot.map((x) => ({
      ...x,
      runtimeInstanceId: RuntimeInstanceId.parse(x.runtimeInstanceId),
    })),
    recovery: r.state.recoveryPending,
    ...(c.worker ? { workerVersion: c.worker.version } : {}),
  };
  const admittedSeq = await timed(
    probe,
    "append-admitted",
    appendRunDecision(deps, r, { kind: "Admit", data }, `admission:${r.sharedRunId}:${r.state.lastSeq}`),
  );
  // Lost the run to another decider: keep the reservation until it expires. Releasing it could free
  // a slot the winner holds under the same key (same run) and let a third placement over-commit.
  if (admittedSeq === undefined) return undefined;
  admitted(admittedSeq);
  if (traced(r.tenantId)) trace({ ev: "admitted", run: r.sharedRunId });
  const claim = claimedAt === undefined ? undefined : { seq: admittedSeq, now: claimedAt };
  // `dispatched` (the intent, before the command) is appended by the send, outside the pass: the
  // pass ends at its placements' `admitted`, and the next one (a replacement's capacity published
  // meanwhile, say) waits for no placement's second append (at P=20 up to 1.8 s each; issue 15).
  // The run stays busy until the send ends, so no other pass of this replica decides it meanwhile.
  return async () => {
    let send: Send | undefined;
    try {
      send = await recordDispatch(deps, r, c, claim);
    } finally {
      // Nothing sent (the run moved on, no endpoint, a store error): the claim is confirmed here, as
      // the pass did before; the run's `admitted` is in the log and counts against its tenant.
      if (!send && claim) await deps.claims?.confirm(r.tenantId, r.sharedRunId, claim.seq, claim.now);
    }
    if (send) await send();
  };
}
